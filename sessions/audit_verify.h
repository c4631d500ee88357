// sessions/audit_verify.h: walking an audit log's hash chain and naming the first break.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/result.h"

namespace moat::sessions {

enum class AuditProblem {
  kNone,          // the chain is intact and ends with session.end
  kEmpty,         // no whole record at all
  kUnparseable,   // a line is not a JSON object (a flipped byte, a glued line)
  kChanged,       // the record's hash does not match its content, or it is not canonical
  kMissing,       // seq jumps: a record was deleted
  kReordered,     // the expected seq appears later in the file: records were moved
  kWrongPrev,     // prev is not the previous record's hash (or the genesis), or session differs
  kTruncated,     // the file ends inside a record
  kIncomplete,    // the whole records chain, but the last one is not session.end
  kBadSignature,  // a checkpoint's signature, key or fields do not hold
  kUnsigned,      // with a trusted key: records after the last checkpoint, or none at all
  kNoDecision,    // a call record names a decision_id that no decision record before it has
};

struct AuditVerdict {
  AuditProblem problem = AuditProblem::kNone;
  uint64_t records = 0;  // records verified before the break (all of them when intact)
  uint64_t seq = 0;      // the seq expected at the break
  uint64_t offset = 0;   // byte offset of the broken record (or of the cut)
  std::string detail;    // one line for a person
  std::string session;
  std::string head;             // hash of the last verified record
  uint64_t checkpoints = 0;     // valid signed checkpoints
  uint64_t signed_through = 0;  // the last seq a valid checkpoint covers
  std::string key_id;           // the key the checkpoints were checked against
  bool key_trusted = false;     // that key was given by the caller, not named by the log
  std::string public_key;       // raw key in use (the caller's, else the log's own)
  bool ok() const { return problem == AuditProblem::kNone; }
};

// Verifies the chain in `data` (a whole file), and that every tool call's record ("call", or
// an old log's per-call "exec" without exec_id) names in decision_id a decision record earlier
// in the file (write-ahead: nothing runs without one). With
// `require_end` false, a log whose last whole record is not session.end (a session still running)
// passes.
//
// Checkpoints are checked against `trusted_key` (a raw Ed25519 public key) when given, else
// against the key the log's first record names, which shows the log is consistent but not
// who wrote it. With a trusted key, a finished log must end in a checkpoint that covers
// every record before it (kUnsigned otherwise): a rewrite without the key cannot pass.
AuditVerdict verify_audit(std::string_view data, bool require_end = true,
                          const std::string& trusted_key = "");
Result<AuditVerdict> verify_audit_file(const std::string& path, bool require_end = true,
                                       const std::string& trusted_key = "");

const char* problem_name(AuditProblem p);  // "changed", "missing", ...

}  // namespace moat::sessions
