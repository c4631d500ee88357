// sessions/audit.h: the supervisor-owned, hash-chained audit log (one JSONL file per session).
//
// Record (POLICY.md "Audit record schema"): {"v":1,"seq":N,"ts":RFC 3339 ns UTC,"type":..,
// "session":..,"id":UUIDv7, ...fields, "prev":"sha256:<hex>","hash":"sha256:<hex>"}, where
// hash = SHA-256 of the RFC 8785 canonical JSON of the record without "hash", and each line
// is itself the canonical JSON of the whole record. seq starts at 1; the first record's prev
// is the genesis below, and the first record carries "policy_hash" so verify can recompute it.
//
// With a signing key, the first record also carries "audit_key" {key_id, public_key}, and a
// "checkpoint" record {head, count, key_id, sig} follows every kCheckpointEvery-th record,
// the first record appended kCheckpointInterval or more after the last checkpoint (a slow
// session's tail is not left unsigned for long), and a final record (below): sig is the key's Ed25519
// signature of checkpoint_message(session, count, head), where head is the hash of record `count`,
// the one just before the checkpoint.
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "base/result.h"
#include "sessions/audit_key.h"

namespace moat::sessions {

inline constexpr int kAuditFormatVersion = 1;
inline constexpr uint64_t kCheckpointEvery = 64;
inline constexpr std::chrono::seconds kCheckpointInterval{60};

// The records a finished session's log ends with: session.end, or session.refused for a session
// moatd refused at set-up (a bad --bind, --network with no rule; it never started, so it has no
// session.end). A signed checkpoint follows each, and verify takes a log ending in one as whole
// (issue 27 item 8: a refused session's log was "incomplete", a false tamper alarm).
inline constexpr std::string_view kFinalRecordTypes[] = {"session.end", "session.refused"};
inline bool is_final_record(std::string_view type) {
  for (std::string_view t : kFinalRecordTypes)
    if (t == type) return true;
  return false;
}

class AuditLog {
 public:
  virtual ~AuditLog() = default;
  // Opens <dir>/<date>/<session>.jsonl for appending, creating it with mode 0600 (and the
  // directories it creates 0700). The chain's genesis is
  // SHA-256("moat-audit/1" | session | policy_hash). If a file for this session already exists
  // under any <date>/ folder, the chain continues there (after dropping a torn last line,
  // which was never acknowledged); a damaged last record refuses the open. EPERM if `dir`
  // is not owned by this user or is group- or world-writable.
  // With `key`, checkpoints are signed with it (see above); without, none are written.
  // `interval` replaces kCheckpointInterval (tests).
  static Result<std::unique_ptr<AuditLog>> open(
      const std::string& dir, const std::string& session, const std::string& policy_hash,
      std::shared_ptr<const AuditKey> key = nullptr,
      std::chrono::steady_clock::duration interval = kCheckpointInterval);
  // A new session's log, as open() makes one, without looking for one to continue: each
  // <date> folder's (a stat per day of logs kept, at every moatd hello) for a name moatd drew
  // at random (128 bits) a moment ago. The file is created exclusively, so a log of that name
  // already in today's folder fails the open (EEXIST) rather than being joined.
  static Result<std::unique_ptr<AuditLog>> create(
      const std::string& dir, const std::string& session, const std::string& policy_hash,
      std::shared_ptr<const AuditKey> key = nullptr,
      std::chrono::steady_clock::duration interval = kCheckpointInterval);
  // When an appended record must be on disk: kNow before append returns (write-ahead: the
  // decision record; session.end); kWithNext may stay in the page cache until the next kNow
  // append or the log's close syncs it (session.start, before anything ran; an exec record,
  // written after its action ran: a crash can lose it, never a later record, since one
  // fdatasync covers them all). A new file's directory entry is synced from the file's
  // creation on, beside the session's build, and its first kNow record returns only once that
  // sync did too; a record a checkpoint follows shares the checkpoint's sync. kNow appends
  // from several threads share one fdatasync when they arrive while another is under way
  // (group commit): each still returns only after a sync that began after its record was
  // written.
  enum class Sync { kNow, kWithNext };
  // Appends one record of `type` with `fields`, adding v, seq, ts, type, session, id, prev
  // and hash; the line is written (and with kNow fdatasync'd) before this returns. A string
  // value that is not UTF-8 is written as {"bytes": base64} (sessions/byte_strings.h).
  // EINVAL if `fields` is not an object or uses one of those reserved names. After a write
  // that could not be undone, every later append fails (fail-closed). Thread-safe.
  virtual Result<void> append(const std::string& type, nlohmann::json fields, Sync sync) = 0;
  Result<void> append(const std::string& type, nlohmann::json fields) {
    return append(type, std::move(fields), Sync::kNow);
  }
  // One typed record (sandbox/audit_records.h: its kType and its one encoder).
  // (Constrained to a record: nlohmann::json converts to Sync, so a (type, fields) call would
  // otherwise also match.)
  template <typename Record>
    requires requires { Record::kType; }
  Result<void> append(const Record& record, Sync sync) {
    return append(std::string(Record::kType), record.to_json(), sync);
  }
  // Writes a record as append(type, fields, kWithNext) does and returns the seq to pass to
  // make_durable, which must return before the action the record allows has any effect: the
  // caller prepares the action meanwhile (moatd starts the worker while the decision syncs,
  // and lets its program run only after).
  virtual Result<uint64_t> append_pending(const std::string& type, nlohmann::json fields) = 0;
  // Returns once every record up to `seq` is on disk (syncs shared as for kNow appends); a
  // failed sync breaks the log, as for append.
  virtual Result<void> make_durable(uint64_t seq) = 0;
  // Asked before each line is written, with its record's type and its size in bytes (a shared
  // moatd's audit bytes per user and day, sandbox/user_quota.h): an error refuses that record
  // as a failed write would, and the log stays usable. The lines this log wrote before it is
  // set are passed at once, as one call with an empty type (their refusal is ignored: they are
  // written). Thread-safe; none by default.
  using Admit = std::function<Result<void>(std::string_view type, std::size_t bytes)>;
  virtual void set_admit(Admit admit) = 0;
  virtual std::string path() const = 0;
  virtual uint64_t last_seq() const = 0;  // 0 before the first record
  virtual std::string head() const = 0;   // the last record's hash (the genesis before one)
};

// The default directory: /var/log/moat for a system moatd, $XDG_STATE_HOME/moat/audit else.
std::string default_audit_dir(bool system_daemon);

// Tests only: what every audit log calls in place of fdatasync(2) on its file and of fsync(2)
// on a new file's directory (given an fd of the directory) (0, or -1 with errno); nullptr
// restores them. Returns the one it replaces.
using AuditSyncForTests = int (*)(int fd);
AuditSyncForTests set_audit_sync_for_tests(AuditSyncForTests sync);

// "sha256:" + hex SHA-256 of "moat-audit/1|<session>|<policy_hash>".
std::string audit_genesis(const std::string& session, const std::string& policy_hash);

// "sha256:" + hex SHA-256 of the canonical JSON of `record` minus its "hash" member.
Result<std::string> audit_record_hash(const nlohmann::json& record);

}  // namespace moat::sessions
