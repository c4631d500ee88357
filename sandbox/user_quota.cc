// sandbox/user_quota.cc: moatd.toml's per-user quotas (see user_quota.h).
#include "sandbox/user_quota.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <string>

#include "base/log.h"
#include "base/sys.h"
#include "base/timestamps.h"
#include "sandbox/audit_records.h"
#include "sessions/audit.h"

namespace moat::sandbox {
namespace {

// A counter file is "YYYY-MM-DD <at most 20 digits>\n": anything longer is not one.
constexpr std::size_t kMaxCounterBytes = 64;

// Writing the count after every line cost each call about 4 ms (a rename over the old file makes
// ext4 write the new one out: 8.8 -> 12.7 ms a `read` call, measured). So it is written when a
// log ends or checkpoints (a signed log's end is a checkpoint), when it reaches the quota, and
// at least every kPersistEvery bytes: a moatd killed meanwhile forgets at most that much a user.
constexpr std::uint64_t kPersistEvery = 64 * 1024;

// "YYYY-MM-DD": the shape base/timestamps.h utc_date writes.
bool is_date(std::string_view d) {
  if (d.size() != 10 || d[4] != '-' || d[7] != '-') return false;
  for (std::size_t i : {0, 1, 2, 3, 5, 6, 8, 9})
    if (d[i] < '0' || d[i] > '9') return false;
  return true;
}

// "<date> <bytes>\n" into `date` and `bytes`; false when the text is anything else.
bool parse_counter(std::string_view text, std::string& date, std::uint64_t& bytes) {
  if (text.size() < 13 || text.back() != '\n' || text[10] != ' ' || !is_date(text.substr(0, 10)))
    return false;
  const char* first = text.data() + 11;
  const char* last = text.data() + text.size() - 1;
  const auto [end, ec] = std::from_chars(first, last, bytes);
  if (ec != std::errc() || end != last || first == last) return false;
  date = std::string(text.substr(0, 10));
  return true;
}

}  // namespace

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

AuditBytesQuota::AuditBytesQuota(std::uint64_t quota, std::string file, std::string dir,
                                 Today today)
    : quota_(quota),
      file_(std::move(file)),
      dir_(std::move(dir)),
      today_(today ? std::move(today) : Today([] { return utc_date(); })) {}

Result<void> AuditBytesQuota::check(uid_t uid) {
  if (quota_ == 0) return {};
  std::lock_guard lock(mu_);
  MOAT_ASSIGN_OR_RETURN(Day * day, today_locked(uid));
  if (day->bytes >= quota_) return fail(reached(uid, *day));
  return {};
}

Result<void> AuditBytesQuota::admit(uid_t uid, std::string_view type, std::size_t bytes) {
  if (quota_ == 0) return {};
  // Only a record that lets something run is ever refused; what already ran is written. A
  // call's decision, and each program it starts (an exec record is written before the program
  // runs, and a program whose record cannot be written is refused): else one call admitted
  // under the quota could write the log without bound, one exec record per program.
  const bool lets_run = type == audit::Decision::kType || type == audit::Exec::kType;
  std::lock_guard lock(mu_);
  auto day = today_locked(uid);
  if (!day) return lets_run ? Result<void>(fail(day.error())) : Result<void>{};
  if (lets_run && (*day)->bytes >= quota_) return fail(reached(uid, **day));
  Day& d = **day;
  d.bytes += bytes;
  const bool due = sessions::is_final_record(type) || type == "checkpoint" ||
                   d.bytes - d.persisted >= kPersistEvery || d.bytes >= quota_;
  if (!due) return {};
  auto written = write_counter(uid, d);
  if (written) d.persisted = d.bytes;
  if (!written && lets_run) return written;
  if (!written) MOAT_LOG_ERROR("audit bytes: %s", written.error().message().c_str());
  return {};
}

Result<AuditBytesQuota::Day*> AuditBytesQuota::today_locked(uid_t uid) {
  auto it = days_.find(uid);
  if (it == days_.end()) {
    MOAT_ASSIGN_OR_RETURN(Day stored, read_counter(uid));
    it = days_.emplace(uid, std::move(stored)).first;
  }
  if (std::string today = today_(); it->second.date != today) it->second = Day{today, 0, 0};
  return &it->second;
}

Result<AuditBytesQuota::Day> AuditBytesQuota::read_counter(uid_t uid) const {
  const std::string path = counter_path(uid);
  auto fd = sys::open_path(path, O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK);
  if (!fd && fd.error().code == ENOENT) return Day{};
  if (!fd) return fail(fd.error());
  auto text = sys::read_to_end(fd->get(), kMaxCounterBytes);
  Day day;
  if (!text || !parse_counter(*text, day.date, day.bytes))
    return fail(Error{EINVAL, "quota.audit_bytes_per_day in " + file_ + ": the counter " + path +
                                  " is not \"YYYY-MM-DD BYTES\" (the audit bytes uid " +
                                  std::to_string(uid) + "'s sessions wrote that UTC day); " +
                                  "the operator may remove it to start the day at 0"});
  day.persisted = day.bytes;
  return day;
}

Result<void> AuditBytesQuota::write_counter(uid_t uid, const Day& day) const {
  const std::string path = counter_path(uid), tmp = path + ".tmp";
  const int flags = O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW;
  auto fd = sys::open_path(tmp, flags, 0600);
  if (!fd && fd.error().code == ENOENT && ::mkdir(dir_.c_str(), 0700) == 0)
    fd = sys::open_path(tmp, flags, 0600);
  if (!fd) return fail(fd.error());
  const std::string text = day.date + " " + std::to_string(day.bytes) + "\n";
  MOAT_TRY(sys::write_all(fd->get(), text.data(), text.size()));
  // A reader (the next moatd) sees the old count or the new one, never a part.
  if (::rename(tmp.c_str(), path.c_str()) != 0)
    return fail(Error::from_errno("rename", errno, path));
  return {};
}

std::string AuditBytesQuota::counter_path(uid_t uid) const {
  return dir_ + "/audit-bytes-" + std::to_string(uid);
}

Error AuditBytesQuota::reached(uid_t uid, const Day& day) const {
  return Error{EDQUOT, "quota.audit_bytes_per_day = " + std::to_string(quota_) + " in " + file_ +
                           " (moatd's quota, set by its operator): uid " + std::to_string(uid) +
                           "'s sessions wrote " + std::to_string(day.bytes) +
                           " bytes of audit records on " + day.date +
                           " (UTC); moatd runs nothing it cannot audit until 00:00 UTC"};
}

}  // namespace moat::sandbox
