// sandbox/user_quota.h: the per-user quotas of moatd.toml a shared moatd holds each user's
// sessions to (sandbox/moatd_config.h UserQuota): sessions open at once, counted per accepted
// hello. The connection bounds at accept are sandbox/connection_limit.h's.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "base/result.h"

namespace moat::sandbox {

// [quota] sessions. A session is counted from its hello, not its connection: an interactive
// session's console connection (docs/security.md, the console channel) creates none, and a
// connection that never says hello is bounded by ConnectionLimit's 64 per user.
class SessionQuota {
 public:
  // `quota` 0: none. `file` names moatd.toml in the refusal.
  SessionQuota(std::uint64_t quota, std::string file) : quota_(quota), file_(std::move(file)) {}

  // A place for one session of `uid`, given back when the last copy of it is dropped; or
  // EDQUOT naming the quota, its file and the uid's open sessions.
  Result<std::shared_ptr<void>> take(uid_t uid);

 private:
  void give_back(uid_t uid);

  std::uint64_t quota_;
  std::string file_;
  std::mutex mu_;
  std::map<uid_t, std::uint64_t> open_;
};

}  // namespace moat::sandbox
