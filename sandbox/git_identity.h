// sandbox/git_identity.h: the person's git identity (user.name, user.email), read on the host at
// hello from their global git config, so a commit inside the sandbox has an author (issue 27
// item 17): the sandbox's HOME is its private /tmp, where the host's ~/.gitconfig is not.
#pragma once

#include <chrono>
#include <cstdint>
#include <future>
#include <mutex>
#include <optional>
#include <string>
#include <sys/types.h>

#include "policy/parse_cache.h"

namespace moat::sandbox {

struct GitIdentity {
  std::string name;   // user.name, "" when unset
  std::string email;  // user.email, "" when unset
  bool operator==(const GitIdentity&) const = default;
};

// What stat(2) says of one file git's --global level reads, or, absent, of its nearest directory
// (the policy parse cache's stamp: policy/parse_cache.h).
struct ConfigFileStamp {
  bool present = false;
  policy::FileStamp stat;
  bool operator==(const ConfigFileStamp&) const = default;
};

// Reads the identity with one `git config --global -z --get-regexp` for user.name and user.email,
// in the working directory "/" with an environment of only HOME (and PATH), so no repository's
// config and nothing but the person's global files (~/.gitconfig, ~/.config/git/config: git
// sees no XDG_CONFIG_HOME) are read. Nothing else of them is taken. A value that git cannot
// give in 5 s, or holds a control character, is left out. The answer is kept for that HOME
// while both files' stamps stay the same (issue 30 point 4: git's spawn was ~2 ms of a
// resident hello); never while one includes another file (its stamp is not taken), nor until
// both settled: a write in the same timestamp tick as the one read would keep the stamp, so a
// file is kept only once its last change is older than its filesystem's granularity allows
// (`settle` for one that stamps finer than 1 ms, 3 s otherwise). Thread-safe.
class GitIdentityReader {
 public:
  explicit GitIdentityReader(std::string git = "/usr/bin/git",
                             std::chrono::nanoseconds settle = std::chrono::milliseconds(100));
  GitIdentity read(const std::string& home);

 private:
  struct Kept {
    std::string home;
    ConfigFileStamp stamps[2];
    GitIdentity identity;
  };
  const std::string git_;
  const std::chrono::nanoseconds settle_;
  std::mutex mu_;
  std::optional<Kept> kept_;  // guarded by mu_
};

// moatd's reader (one per process).
GitIdentity read_git_identity(const std::string& home);
// read_git_identity on a thread of its own that nobody joins, so dropping the future does not
// wait for git (a refused hello is answered and its connection ends while git still runs). At
// most kMaxGitReadsAhead run at once: past that, and when no thread can be made, the future is
// not valid and the caller reads the identity itself when it needs it.
inline constexpr int kMaxGitReadsAhead = 4;
std::future<GitIdentity> read_git_identity_ahead(const std::string& home);

// The sandbox's $HOME/.gitconfig for it: a [user] section with what is set, each value quoted as
// git-config(1) reads it; "" when nothing is set. Lowest of git's config levels but the system
// one, so `git config user.name X` in a repository, `git config --global` and `git -c` override it.
std::string gitconfig_text(const GitIdentity& identity);

}  // namespace moat::sandbox
