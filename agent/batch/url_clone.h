// agent/batch/url_clone.h: a url repo's way into a batch. The network is reached only by `git
// clone` inside a moat sandbox (`moat sandbox exec --network`, through moatd's proxy, as the
// policy's [[network]] rules allow); what leaves that sandbox is one git bundle on its stdout,
// the only thing of the clone the host reads. Host git then makes moat's copy from the bundle
// with no system or global git configuration (no filter, hook or helper of the person's runs
// over the remote's files).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "agent/batch/env.h"
#include "agent/batch/manifest.h"
#include "base/result.h"

namespace moat::agent::batch {

// Before anything starts: every url item's host:port must be allowed (not asked: items are
// headless) by the policy its clone runs under (the system and user layers, the built-in
// default, the manifest's files). The error names the url, the host, the deciding rule and the
// [[network]] rule to add. moatd's proxy decides again at each connection; this only refuses
// early and clearly. Returns that policy's resources.network_bytes, the most a url repo's
// checkout may hold (url_checkout_fits), or 0 when the shard has no url.
Result<std::int64_t> check_urls_allowed(const std::vector<const Item*>& items,
                                        const std::vector<std::string>& policy_files,
                                        const std::string& scratch_dir);

// The environment of host git over a url item's files: no system, global or environment
// (GIT_CONFIG_COUNT, GIT_CONFIG_PARAMETERS) configuration, so
// nothing the person configured for their own repositories (filter drivers such as git-lfs,
// hooksPath, fsmonitor, credential helpers, submodule.recurse) acts on the remote's content.
const std::vector<std::pair<std::string, std::string>>& isolated_git_env();

// A url repo's checkout is the remote's choice of bytes, written on the host outside any
// sandbox: a small pack of one highly compressible blob named many times (a "git bomb") would
// fill the disk. The tree at `git_dir`'s HEAD may hold at most `max_bytes` of files (the
// policy's resources.network_bytes, what a session may fetch) and kMaxCheckoutEntries entries;
// the listing stops at the first entry past either.
inline constexpr std::int64_t kMaxCheckoutEntries = 1'000'000;
Result<void> url_checkout_fits(const std::string& git_dir, std::int64_t max_bytes);

struct UrlBundle {
  std::string path;     // OUT/clones/KEY/repo.bundle
  std::string dir;      // OUT/clones/KEY: the clone's log (clone.log) and audit log (audit/)
  bool cached = false;  // an earlier item or run of this batch fetched it
};

// `url`'s bundle, fetched in a sandbox once per OUT: items with the same url wait for one
// clone (a lock file), and a --resume finds the bundle already there.
Result<UrlBundle> fetch_url_bundle(const std::string& url, const BatchEnv& env);

}  // namespace moat::agent::batch
