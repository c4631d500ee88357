// sandbox/user_quota.h: the per-user quotas of moatd.toml a shared moatd holds each user's
// sessions to (sandbox/moatd_config.h UserQuota): sessions open at once, counted per accepted
// hello, and the bytes their audit logs take in a UTC day. The connection bounds at accept are
// sandbox/connection_limit.h's; memory and pids are the user's cgroup's (sandbox/cgroup.h).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
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

// [quota] audit_bytes_per_day: the bytes of audit records all of a user's sessions append in
// one UTC day. The count outlives moatd: <dir>/audit-bytes-<uid> holds "<YYYY-MM-DD> <bytes>\n",
// replaced whole by a rename when a log ends or checkpoints, when the quota is reached, and at
// least every 64 KiB (not synced: a moatd killed or a crash can lose the last records' count). Once the quota is reached, a hello is refused and so is a `decision` record, the one
// that lets a call, a path or a server's start go ahead: a call that cannot be audited does not
// run. Every other record is still written and counted (what a running call did, the
// session's end), so a day may end past the quota by what the calls running then write.
class AuditBytesQuota {
 public:
  using Today = std::function<std::string()>;  // "YYYY-MM-DD" in UTC (tests pass their own)
  // `quota` 0: none. `file` names moatd.toml in the refusals; `dir` holds the counters.
  AuditBytesQuota(std::uint64_t quota, std::string file, std::string dir, Today today = {});

  // Before a hello: EDQUOT naming the quota once `uid`'s sessions reached it today; an error
  // naming the counter file when it cannot be read or holds anything but a count.
  Result<void> check(uid_t uid);
  // A line of `type` and `bytes` one of `uid`'s logs is about to write (AuditLog::Admit).
  Result<void> admit(uid_t uid, std::string_view type, std::size_t bytes);

 private:
  struct Day {
    std::string date;
    std::uint64_t bytes = 0;
    std::uint64_t persisted = 0;  // the count the file holds
  };
  // `uid`'s count today: from its file the first time, 0 when the file is of another day.
  Result<Day*> today_locked(uid_t uid);
  Result<Day> read_counter(uid_t uid) const;
  Result<void> write_counter(uid_t uid, const Day& day) const;
  std::string counter_path(uid_t uid) const;
  Error reached(uid_t uid, const Day& day) const;

  std::uint64_t quota_;
  std::string file_;
  std::string dir_;
  Today today_;
  std::mutex mu_;
  std::map<uid_t, Day> days_;
};

// Both, as a shared moatd holds them for every user (one per moatd, from its moatd.toml).
struct UserQuotas {
  SessionQuota sessions;
  AuditBytesQuota audit_bytes;
};

}  // namespace moat::sandbox
