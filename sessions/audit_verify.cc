// sessions/audit_verify.cc: the chain walk behind `moat audit verify`.
#include "sessions/audit_verify.h"

#include <set>
#include <vector>

#include "base/log.h"
#include "sessions/audit.h"
#include "sessions/audit_key.h"
#include "sessions/jcs.h"
#include "sessions/json_util.h"
#include "sessions/jsonl.h"

namespace moat::sessions {
namespace {

AuditVerdict broken(AuditVerdict v, AuditProblem p, uint64_t offset, std::string detail) {
  v.problem = p;
  v.offset = offset;
  v.detail = std::move(detail);
  return v;
}

// Whether a record with seq `want` appears after line `from`: tells a moved record from a
// deleted one.
bool seq_appears_later(const std::vector<Line>& lines, size_t from, uint64_t want) {
  for (size_t i = from; i < lines.size(); ++i)
    if (int_field(parse_json(lines[i].text), "seq", -1) == static_cast<int64_t>(want)) return true;
  return false;
}

// Checks one record against the chain so far; kNone when it extends the chain.
AuditVerdict check_record(AuditVerdict v, const std::vector<Line>& lines, size_t i) {
  const Line& line = lines[i];
  const uint64_t want = v.records + 1;
  const std::string at = "record at byte " + std::to_string(line.offset);
  const nlohmann::json rec = parse_json(line.text);
  if (rec.is_discarded() || !rec.is_object())
    return broken(v, AuditProblem::kUnparseable, line.offset, at + " is not a JSON object");
  auto hash = audit_record_hash(rec);
  if (!hash || str_field(rec, "hash") != *hash)
    return broken(v, AuditProblem::kChanged, line.offset, at + ": hash does not match content");
  // Content that hashes right but is not byte-identical to its canonical form was edited in
  // a way JSON parsing hides (escapes, spacing): still a change to the file.
  auto canon = canonical_json(rec);
  if (!canon || *canon != line.text)
    return broken(v, AuditProblem::kChanged, line.offset, at + ": not in canonical form");
  const int64_t seq = int_field(rec, "seq", -1);
  if (seq != static_cast<int64_t>(want)) {
    const bool moved = seq_appears_later(lines, i + 1, want);
    return broken(v, moved ? AuditProblem::kReordered : AuditProblem::kMissing, line.offset,
                  at + " has seq " + std::to_string(seq) + ", expected " + std::to_string(want) +
                      (moved ? " (records reordered)" : " (record deleted)"));
  }
  if (want == 1) {
    v.session = str_field(rec, "session");
    v.head = audit_genesis(v.session, str_field(rec, "policy_hash"));
    if (!v.key_trusted && rec.contains("audit_key") && rec["audit_key"].is_object()) {
      v.public_key = strict_base64_decode(str_field(rec["audit_key"], "public_key"));
      v.key_id = audit_key_id(v.public_key);
    }
  }
  if (str_field(rec, "session") != v.session)
    return broken(v, AuditProblem::kWrongPrev, line.offset, at + " belongs to another session");
  if (str_field(rec, "prev") != v.head)
    return broken(v, AuditProblem::kWrongPrev, line.offset,
                  at + ": prev is not the previous record's hash");
  if (str_field(rec, "type") == "checkpoint") {
    const int64_t count = int_field(rec, "count", -1);
    const std::string head = str_field(rec, "head");
    if (count != seq - 1 || head != v.head)
      return broken(v, AuditProblem::kBadSignature, line.offset,
                    at + ": checkpoint does not name the record before it");
    if (v.public_key.empty())
      return broken(v, AuditProblem::kBadSignature, line.offset,
                    at + ": checkpoint, but no key to check it against");
    if (str_field(rec, "key_id") != v.key_id)
      return broken(
          v, AuditProblem::kBadSignature, line.offset,
          at + ": checkpoint signed by " + str_field(rec, "key_id") + ", not " + v.key_id);
    if (!verify_audit_signature(v.public_key,
                                checkpoint_message(v.session, static_cast<uint64_t>(count), head),
                                str_field(rec, "sig")))
      return broken(v, AuditProblem::kBadSignature, line.offset,
                    at + ": checkpoint signature does not verify under " + v.key_id);
    ++v.checkpoints;
    v.signed_through = static_cast<uint64_t>(count);
  }
  v.head = *hash;
  v.records = want;
  return v;
}

// A tool call's own record: "call", or the per-call "exec" of logs written before exec
// records per program existed (those have no exec_id).
bool is_call_record(const nlohmann::json& rec) {
  const std::string type = str_field(rec, "type");
  return type == "call" || (type == "exec" && !rec.contains("exec_id"));
}

}  // namespace

const char* problem_name(AuditProblem p) {
  switch (p) {
    case AuditProblem::kNone: return "ok";
    case AuditProblem::kEmpty: return "empty";
    case AuditProblem::kUnparseable: return "unparseable";
    case AuditProblem::kChanged: return "changed";
    case AuditProblem::kMissing: return "missing";
    case AuditProblem::kReordered: return "reordered";
    case AuditProblem::kWrongPrev: return "wrong-prev";
    case AuditProblem::kTruncated: return "truncated";
    case AuditProblem::kIncomplete: return "incomplete";
    case AuditProblem::kBadSignature: return "bad-signature";
    case AuditProblem::kUnsigned: return "unsigned";
    case AuditProblem::kNoDecision: return "no-decision";
  }
  return "unknown";
}

AuditVerdict verify_audit(std::string_view data, bool require_end, const std::string& trusted_key) {
  size_t torn = 0;
  const std::vector<Line> lines = whole_lines(data, &torn);
  AuditVerdict v;
  if (!trusted_key.empty()) {
    v.public_key = trusted_key;
    v.key_id = audit_key_id(trusted_key);
    v.key_trusted = true;
  }
  std::string last_type;
  uint64_t last_checkpoint_seq = 0;
  std::set<std::string> decisions;  // decision_ids recorded so far
  for (size_t i = 0; i < lines.size(); ++i) {
    v = check_record(std::move(v), lines, i);
    if (!v.ok()) {
      v.seq = v.records + 1;
      return v;
    }
    const nlohmann::json rec = parse_json(lines[i].text);
    const std::string type = str_field(rec, "type");
    // The chain shows the file was not edited after the fact; this shows nothing ran that
    // moatd did not record a decision for first (a decision that could not be written once
    // left an exec pointing at nothing, and the chain still held).
    if (type == "decision") decisions.insert(str_field(rec, "decision_id"));
    // The call ("call") and each program it started ("exec") name the call's decision.
    if ((is_call_record(rec) || str_field(rec, "type") == "exec") &&
        decisions.count(str_field(rec, "decision_id")) == 0) {
      v.records -= 1;
      v.seq = v.records + 1;
      return broken(v, AuditProblem::kNoDecision, lines[i].offset,
                    type + " record names decision_id " +
                        moat::quoted(str_field(rec, "decision_id")) +
                        ", which no decision record before it has");
    }
    if (type == "checkpoint") last_checkpoint_seq = v.records;
    else last_type = type;  // a final checkpoint follows session.end (or session.refused)
  }
  v.seq = v.records + 1;
  if (torn > 0)
    return broken(v, AuditProblem::kTruncated, data.size() - torn,
                  "file ends inside a record (" + std::to_string(torn) + " bytes) after seq " +
                      std::to_string(v.records));
  if (lines.empty()) return broken(v, AuditProblem::kEmpty, 0, "no records");
  if (require_end && !is_final_record(last_type))
    return broken(v, AuditProblem::kIncomplete, data.size(),
                  "ends at seq " + std::to_string(v.records) +
                      " without session.end: truncated, or the session is still running");
  // With a key the caller trusts, the end must be signed: otherwise whoever rewrote the tail
  // (or the whole file, dropping its checkpoints) would pass.
  if (v.key_trusted && require_end && last_checkpoint_seq != v.records)
    return broken(v, AuditProblem::kUnsigned, data.size(),
                  v.checkpoints == 0
                      ? "no signed checkpoint at all under " + v.key_id
                      : "records after seq " + std::to_string(v.signed_through) +
                            " are not covered by a checkpoint signed with " + v.key_id);
  v.seq = 0;
  return v;
}

Result<AuditVerdict> verify_audit_file(const std::string& path, bool require_end,
                                       const std::string& trusted_key) {
  MOAT_ASSIGN_OR_RETURN(std::string data, read_file(path));
  return verify_audit(data, require_end, trusted_key);
}

}  // namespace moat::sessions
