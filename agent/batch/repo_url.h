// agent/batch/repo_url.h: the `url =` of a manifest's [[repo]]: which URLs a batch clones
// (https:// and http://, reached through moatd's network proxy), the item id one gives by
// default, and the `ref =` text that may pick what the item starts from.
#pragma once

#include <string>
#include <string_view>

#include "base/result.h"

namespace moat::agent::batch {

struct RepoUrl {
  std::string text;    // as given (validated)
  std::string scheme;  // "https" or "http"
  std::string host;    // lowercase, as the policy's [[network]] rules name it
  int port = 0;        // the URL's, else 443 or 80
  std::string path;    // from the first '/', never empty
};

// The URL or an error saying what is wrong and what is accepted (no file:line:col: the
// caller names the place).
Result<RepoUrl> parse_repo_url(std::string_view text);

// The item id a url repo gets without `id =`: the path's last component without ".git"
// ("https://h/org/svc-a.git" -> "svc-a").
std::string default_url_id(const RepoUrl& url);

// `ref =`: a branch, tag or commit name git can resolve, never an option or a revision
// expression; an error says what is accepted.
Result<void> check_ref(std::string_view ref);

}  // namespace moat::agent::batch
