// sessions/audit_verify.h: walking an audit log's hash chain and naming the first break.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/result.h"

namespace moat::sessions {

enum class AuditProblem {
  kNone,         // the chain is intact and ends with session.end
  kEmpty,        // no whole record at all
  kUnparseable,  // a line is not a JSON object (a flipped byte, a glued line)
  kChanged,      // the record's hash does not match its content, or it is not canonical
  kMissing,      // seq jumps: a record was deleted
  kReordered,    // the expected seq appears later in the file: records were moved
  kWrongPrev,    // prev is not the previous record's hash (or the genesis), or session differs
  kTruncated,    // the file ends inside a record
  kIncomplete,   // the whole records chain, but the last one is not session.end
};

struct AuditVerdict {
  AuditProblem problem = AuditProblem::kNone;
  uint64_t records = 0;   // records verified before the break (all of them when intact)
  uint64_t seq = 0;       // the seq expected at the break
  uint64_t offset = 0;    // byte offset of the broken record (or of the cut)
  std::string detail;     // one line for a person
  std::string session;
  std::string head;       // hash of the last verified record
  bool ok() const { return problem == AuditProblem::kNone; }
};

// Verifies the chain in `data` (a whole file). With `require_end` false, a log whose last
// whole record is not session.end (a session still running) passes.
AuditVerdict verify_audit(std::string_view data, bool require_end = true);
Result<AuditVerdict> verify_audit_file(const std::string& path, bool require_end = true);

const char* problem_name(AuditProblem p);  // "changed", "missing", ...

}  // namespace moat::sessions
