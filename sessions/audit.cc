// sessions/audit.cc: AuditLog: canonical, hash-chained, write-ahead JSONL records.
#include "sessions/audit.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <ctime>
#include <future>
#include <mutex>
#include <system_error>

#include "base/log.h"
#include "base/sys.h"
#include "base/timestamps.h"
#include "base/unique_fd.h"
#include "sessions/byte_strings.h"
#include "sessions/digest.h"
#include "sessions/ids.h"
#include "sessions/jcs.h"
#include "sessions/json_util.h"
#include "sessions/jsonl.h"

namespace moat::sessions {
namespace {

// The log must not be readable by other users (argv can hold secrets) nor writable by
// anyone but the supervisor; the directory likewise hides which sessions exist.
constexpr mode_t kFileMode = 0600;
constexpr mode_t kDirMode = 0700;

const char* const kReserved[] = {"v", "seq", "ts", "type", "session", "id", "prev", "hash"};

int real_fdatasync(int fd) { return ::fdatasync(fd); }
std::atomic<AuditSyncForTests> g_sync{real_fdatasync};

// A new log's directory entry to the disk: fsync(2) on the directory, or the tests' hook.
Result<void> sync_dir(const std::string& dir) {
  const AuditSyncForTests sync = g_sync.load();
  if (sync == real_fdatasync) return fsync_dir(dir);
  MOAT_ASSIGN_OR_RETURN(UniqueFd fd, sys::open_path(dir, O_RDONLY | O_DIRECTORY));
  if (sync(fd.get()) != 0) return fail(Error::from_errno("fsync", errno, dir));
  return {};
}

// A new log's directory <dir>/<date>, and <dir> too when this open made the day's directory
// (the day's first session): both names must survive a crash. The two syncs run at once when a
// thread can be had. A session that found the day's directory made does not sync <dir> again:
// only a crash within the first session's own sync of it (milliseconds, at a UTC midnight) could
// lose it, and ext4 and xfs commit it with the day directory's fsync anyway.
Result<void> sync_day_dir_and_parent(const std::string& day_dir, bool day_dir_made) {
  if (!day_dir_made) return sync_dir(day_dir);
  std::future<Result<void>> parent;
  try {
    parent = std::async(std::launch::async, sync_dir, dirname_of(day_dir));
  } catch (const std::system_error&) {
    parent = std::async(std::launch::deferred, sync_dir, dirname_of(day_dir));
  }
  Result<void> own = sync_dir(day_dir);
  Result<void> holder = parent.get();
  if (!own) return own;
  return holder;
}

// An existing <dir>/<date>/<session>.jsonl, so a resumed session continues its chain.
std::string find_existing(const std::string& dir, const std::string& session) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return "";
  std::string found;
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    const std::string candidate = dir + "/" + name + "/" + session + ".jsonl";
    struct stat st {};
    // The newest date folder wins: that file holds the chain's current head.
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) && candidate > found)
      found = candidate;
  }
  ::closedir(d);
  return found;
}

// The chain proves order and content, not authorship: whoever can write the directory can
// replace a whole file. So it must be ours alone (POLICY.md: a directory the agent cannot
// write); a shared or foreign directory is refused rather than trusted.
Result<void> check_private_dir(const std::string& dir) {
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) return fail(Error::from_errno("lstat", errno, dir));
  if (!S_ISDIR(st.st_mode)) return fail(Error::from_errno("audit dir", ENOTDIR, dir));
  if (st.st_uid != ::geteuid())
    return fail(Error::from_errno("audit dir owned by another user", EPERM, dir));
  if ((st.st_mode & 022) != 0)
    return fail(Error::from_errno("audit dir is group- or world-writable", EPERM, dir));
  return {};
}

class JsonlAuditLog final : public AuditLog {
 public:
  JsonlAuditLog(std::string path, UniqueFd fd, std::string session, std::string policy_hash,
                std::shared_ptr<const AuditKey> key, std::chrono::steady_clock::duration interval)
      : path_(std::move(path)),
        fd_(std::move(fd)),
        session_(std::move(session)),
        policy_hash_(std::move(policy_hash)),
        key_(std::move(key)),
        interval_(interval),
        head_(audit_genesis(session_, policy_hash_)) {}

  ~JsonlAuditLog() override {
    if (synced_seq_ < seq_) (void)g_sync.load()(fd_.get());
    if (dir_synced_.valid()) (void)dir_synced_.get();
  }
  // A new file's name (and its day directory's) goes to the disk from its creation on, on a
  // thread of its own, while the session is built: the first synced record (sync_now) waits
  // for it, so its fsync is off a decision's path. Without a thread to spare it is done with
  // that record, as before.
  void sync_dir_from_now(const std::string& dir, bool dir_made) {
    try {
      dir_synced_ = std::async(std::launch::async, sync_day_dir_and_parent, dir, dir_made);
    } catch (const std::system_error&) {
      dir_synced_ = std::async(std::launch::deferred, sync_day_dir_and_parent, dir, dir_made);
    }
  }
  using AuditLog::append;
  Result<void> append(const std::string& type, nlohmann::json fields, Sync sync) override;
  void set_admit(Admit admit) override {
    std::lock_guard<std::mutex> lock(mu_);
    (void)admit({}, written_);
    admit_ = std::move(admit);
  }
  std::string path() const override { return path_; }
  uint64_t last_seq() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return seq_;
  }
  std::string head() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return head_;
  }

  Result<uint64_t> append_pending(const std::string& type, nlohmann::json fields) override;
  Result<void> make_durable(uint64_t seq) override;

  Result<void> resume_chain();

 private:
  // With mu_ held: writes the record (and a checkpoint when one is due), returns the seq the
  // caller must see synced (the checkpoint's, when one followed).
  Result<uint64_t> write_record_locked(const std::string& type, nlohmann::json fields);
  Result<void> write_locked(const std::string& type, nlohmann::json record);
  Result<void> sync_through(std::unique_lock<std::mutex>& lock, uint64_t seq);
  Result<void> sync_now(std::unique_lock<std::mutex>& lock);
  bool checkpoint_due(const std::string& type, std::chrono::steady_clock::time_point now) const;

  std::string path_;
  UniqueFd fd_;
  std::string session_;
  std::string policy_hash_;
  std::shared_ptr<const AuditKey> key_;
  std::chrono::steady_clock::duration interval_;
  std::chrono::steady_clock::time_point last_checkpoint_ = std::chrono::steady_clock::now();
  mutable std::mutex mu_;  // moatd appends from concurrent calls; seq and prev need one order
  uint64_t seq_ = 0;
  std::string head_;
  off_t size_ = 0;
  std::uint64_t written_ = 0;  // bytes this log appended (resume_chain's are not counted)
  Admit admit_;                // asked before each line (set_admit)
  bool broken_ = false;
  // Group commit: records up to synced_seq_ are on disk; one thread at a time syncs (syncing_),
  // outside mu_, and every record written before its fdatasync began is covered by it, so
  // calls whose decisions arrive together share one sync instead of queueing one each.
  uint64_t synced_seq_ = 0;
  bool syncing_ = false;
  std::condition_variable synced_;
  // A new file's directory sync (sync_dir_from_now), awaited by the first sync_now.
  std::future<Result<void>> dir_synced_;
};

Result<void> JsonlAuditLog::append(const std::string& type, nlohmann::json fields, Sync sync) {
  std::unique_lock<std::mutex> lock(mu_);
  MOAT_ASSIGN_OR_RETURN(const uint64_t seq, write_record_locked(type, std::move(fields)));
  // Write-ahead: the caller runs the action only after this returns, so the record must be
  // on disk first, not in the page cache (with it, every record before it).
  if (sync == Sync::kNow) return sync_through(lock, seq);
  return {};
}

Result<uint64_t> JsonlAuditLog::append_pending(const std::string& type, nlohmann::json fields) {
  std::lock_guard<std::mutex> lock(mu_);
  return write_record_locked(type, std::move(fields));
}

Result<void> JsonlAuditLog::make_durable(uint64_t seq) {
  std::unique_lock<std::mutex> lock(mu_);
  return sync_through(lock, seq);
}

Result<uint64_t> JsonlAuditLog::write_record_locked(const std::string& type,
                                                    nlohmann::json fields) {
  if (!fields.is_object()) return fail(Error::from_errno("audit append", EINVAL, "fields"));
  for (const char* key : kReserved)
    if (fields.contains(key)) return fail(Error::from_errno("audit append", EINVAL, key));
  // A command or path that is not UTF-8 is recorded as its exact bytes: the record that lets
  // the action run must never fail for what the action names.
  fields = encode_byte_strings(std::move(fields));
  if (broken_) return fail(Error::from_errno("audit append", EIO, path_ + " is broken"));
  const auto now = std::chrono::steady_clock::now();
  const bool checkpoint = checkpoint_due(type, now);
  MOAT_TRY(write_locked(type, std::move(fields)));
  const uint64_t seq = seq_;
  if (!checkpoint) return seq;
  last_checkpoint_ = now;
  // The checkpoint signs the head just written; it is synced like the record it follows.
  nlohmann::json cp = {{"head", head_},
                       {"count", seq_},
                       {"key_id", key_->key_id()},
                       {"sig", key_->sign_b64(checkpoint_message(session_, seq_, head_))}};
  MOAT_TRY(write_locked("checkpoint", std::move(cp)));
  return seq_;
}

Result<void> JsonlAuditLog::write_locked(const std::string& type, nlohmann::json record) {
  record["v"] = kAuditFormatVersion;
  record["seq"] = seq_ + 1;
  record["ts"] = now_rfc3339_ns();
  record["type"] = type;
  record["session"] = session_;
  record["id"] = uuid_v7();
  record["prev"] = head_;
  if (seq_ == 0 && !record.contains("policy_hash")) record["policy_hash"] = policy_hash_;
  if (seq_ == 0 && key_)
    record["audit_key"] = {{"key_id", key_->key_id()}, {"public_key", key_->public_key_b64()}};
  // One canonical form: the hash covers the record without "hash" (audit_record_hash, which
  // verify uses), and the line is that form with the hash put in its sorted place.
  MOAT_ASSIGN_OR_RETURN(CanonicalObject canon, canonical_object(record, "hash"));
  std::string hash = "sha256:" + sha256_hex(canon.text);
  MOAT_ASSIGN_OR_RETURN(std::string line, canon.with_member(hash));
  line += '\n';
  if (admit_) MOAT_TRY(admit_(type, line.size()));
  if (auto w = append_line(fd_.get(), line, size_); !w) {
    // append_line undid a short write unless its ftruncate failed: then the file ends in a
    // torn record and nothing more may be chained after it.
    if (w.error().context.rfind("ftruncate", 0) == 0) broken_ = true;
    return fail(w.error().with_context("audit " + path_));
  }
  size_ += static_cast<off_t>(line.size());
  written_ += line.size();
  ++seq_;
  head_ = std::move(hash);
  return {};
}

// Returns once record `seq` is on disk: synced by this thread, or by the one syncing when
// it was written (only if that sync began after it: else this thread waits and syncs next).
// A failed sync breaks the log for everyone waiting on it: none of them may act.
Result<void> JsonlAuditLog::sync_through(std::unique_lock<std::mutex>& lock, uint64_t seq) {
  while (synced_seq_ < seq) {
    if (broken_) return fail(Error::from_errno("fdatasync", EIO, path_ + " is broken"));
    if (syncing_) {
      synced_.wait(lock);
      continue;
    }
    MOAT_TRY(sync_now(lock));
  }
  return {};
}

Result<void> JsonlAuditLog::sync_now(std::unique_lock<std::mutex>& lock) {
  syncing_ = true;
  const uint64_t upto = seq_;  // every record written so far is in the file
  lock.unlock();
  Result<void> synced{};
  if (g_sync.load()(fd_.get()) != 0) synced = fail(Error::from_errno("fdatasync", errno, path_));
  // One syncing thread at a time (syncing_): only it takes the directory's outcome, once.
  else if (dir_synced_.valid()) synced = dir_synced_.get();
  lock.lock();
  syncing_ = false;
  if (synced) {
    synced_seq_ = std::max(synced_seq_, upto);
  } else {
    // The kernel may have dropped the dirty page (the chain is unknown), or the file's name
    // may not survive a crash: nothing may depend on it.
    broken_ = true;
  }
  synced_.notify_all();
  if (!synced) return fail(synced.error().with_context("audit " + path_));
  return {};
}

bool JsonlAuditLog::checkpoint_due(const std::string& type,
                                   std::chrono::steady_clock::time_point now) const {
  return key_ != nullptr && ((seq_ + 1) % kCheckpointEvery == 0 || is_final_record(type) ||
                             now - last_checkpoint_ >= interval_);
}

Result<void> JsonlAuditLog::resume_chain() {
  MOAT_ASSIGN_OR_RETURN(std::string data, read_file(path_));
  size_t torn = 0;
  const std::vector<Line> lines = whole_lines(data, &torn);
  size_ = static_cast<off_t>(data.size() - torn);
  if (torn > 0) {
    MOAT_LOG_WARN("audit %s: dropping %zu bytes of a torn last record", path_.c_str(), torn);
    if (::ftruncate(fd_.get(), size_) != 0)
      return fail(Error::from_errno("ftruncate torn tail", errno, path_));
  }
  if (lines.empty()) return {};
  const nlohmann::json last = parse_json(lines.back().text);
  const std::string hash = str_field(last, "hash");
  const int64_t seq = int_field(last, "seq", -1);
  if (hash.empty() || seq < 1 || str_field(last, "session") != session_)
    return fail(Error::msg("audit " + path_ + ": last record at byte " +
                           std::to_string(lines.back().offset) +
                           " is damaged; run `moat audit verify`"));
  seq_ = static_cast<uint64_t>(seq);
  synced_seq_ = seq_;  // acknowledged by the moatd that wrote it
  head_ = hash;
  return {};
}

}  // namespace

AuditSyncForTests set_audit_sync_for_tests(AuditSyncForTests sync) {
  return g_sync.exchange(sync != nullptr ? sync : real_fdatasync);
}

std::string audit_genesis(const std::string& session, const std::string& policy_hash) {
  return "sha256:" + sha256_hex("moat-audit/1|" + session + "|" + policy_hash);
}

Result<std::string> audit_record_hash(const nlohmann::json& record) {
  nlohmann::json copy = record;
  copy.erase("hash");
  MOAT_ASSIGN_OR_RETURN(std::string canon, canonical_json(copy));
  return "sha256:" + sha256_hex(canon);
}

namespace {

// open() and create(): with `may_continue`, a log of this session in any <date> folder is
// continued; without, the log is always a new file in today's folder.
Result<std::unique_ptr<AuditLog>> open_log(const std::string& dir, const std::string& session,
                                           const std::string& policy_hash,
                                           std::shared_ptr<const AuditKey> key,
                                           std::chrono::steady_clock::duration interval,
                                           bool may_continue) {
  // The session id becomes a file name: refuse anything that could leave the directory.
  if (session.empty() || session.find('/') != std::string::npos || session[0] == '.')
    return fail(Error::from_errno("audit open", EINVAL, session));
  MOAT_TRY(make_dirs(dir, kDirMode));
  MOAT_TRY(check_private_dir(dir));
  std::string path = may_continue ? find_existing(dir, session) : "";
  const bool fresh = path.empty();
  bool day_dir_made = false;  // by this open (or one racing it: then both sync <dir>)
  if (fresh) {
    const std::string day_dir = dir + "/" + utc_date();
    day_dir_made = ::access(day_dir.c_str(), F_OK) != 0;
    // <dir> is there (make_dirs above): only the day's folder may be missing. One that is no
    // directory fails the open below (ENOTDIR).
    if (::mkdir(day_dir.c_str(), kDirMode) != 0 && errno != EEXIST)
      return fail(Error::from_errno("mkdir", errno, day_dir));
    path = day_dir + "/" + session + ".jsonl";
  }
  MOAT_ASSIGN_OR_RETURN(UniqueFd fd, open_for_append(path, fresh, kFileMode));
  auto log = std::make_unique<JsonlAuditLog>(path, std::move(fd), session, policy_hash,
                                             std::move(key), interval);
  if (fresh) {
    log->sync_dir_from_now(dirname_of(path), day_dir_made);
  } else {
    MOAT_TRY(log->resume_chain());
  }
  return std::unique_ptr<AuditLog>(std::move(log));
}

}  // namespace

Result<std::unique_ptr<AuditLog>> AuditLog::open(const std::string& dir, const std::string& session,
                                                 const std::string& policy_hash,
                                                 std::shared_ptr<const AuditKey> key,
                                                 std::chrono::steady_clock::duration interval) {
  return open_log(dir, session, policy_hash, std::move(key), interval, true);
}

Result<std::unique_ptr<AuditLog>> AuditLog::create(const std::string& dir,
                                                   const std::string& session,
                                                   const std::string& policy_hash,
                                                   std::shared_ptr<const AuditKey> key,
                                                   std::chrono::steady_clock::duration interval) {
  return open_log(dir, session, policy_hash, std::move(key), interval, false);
}

}  // namespace moat::sessions
