// sandbox/user_quota.cc: moatd.toml's per-user quotas (see user_quota.h).
#include "sandbox/user_quota.h"

#include <cerrno>
#include <string>

namespace moat::sandbox {

Result<std::shared_ptr<void>> SessionQuota::take(uid_t uid) {
  std::lock_guard lock(mu_);
  std::uint64_t& mine = open_[uid];
  if (quota_ != 0 && mine >= quota_)  // quota_ >= 1: `mine` was already counted
    return fail(Error{EDQUOT, "quota.sessions = " + std::to_string(quota_) + " in " + file_ +
                                  ": uid " + std::to_string(uid) + " has " +
                                  std::to_string(mine) + " sessions open on this moatd; " +
                                  "end one first"});
  ++mine;
  // The place's deleter gives it back; the pointer itself is never used.
  return std::shared_ptr<void>(this, [uid](SessionQuota* self) { self->give_back(uid); });
}

void SessionQuota::give_back(uid_t uid) {
  std::lock_guard lock(mu_);
  if (auto it = open_.find(uid); it != open_.end() && --it->second == 0) open_.erase(it);
}

}  // namespace moat::sandbox
