// sessions/render_audit.h: audit records for people: a filtered text timeline and an HTML
// page of one session (decisions, commands with exit codes and durations, files touched).
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "base/result.h"
#include "sessions/audit_verify.h"

namespace moat::sessions {

// The records of an audit file, in file order. Lines that are not JSON objects (a damaged
// file: `verify` says where) are skipped, so a reviewer still sees the rest.
Result<std::vector<nlohmann::json>> load_audit_records(const std::string& path);

// Empty fields match everything; `decision` matches decision records by their result
// (allow, ask, deny) and excludes other types.
struct AuditFilter {
  std::string session;
  std::string type;
  std::string decision;
};
bool audit_matches(const nlohmann::json& record, const AuditFilter& filter);

// "   17 2026-03-04T10:15:02.118Z decision   deny  bash git push -f  (org.no-force-push)"
std::string audit_line(const nlohmann::json& record);

// The files an exec record reports as mutated (filesMutated or files_mutated, path strings
// or {path, op} objects).
std::vector<std::string> files_touched(const nlohmann::json& record);

// A self-contained HTML timeline of `records` (one session), headed by the chain verdict.
std::string audit_html(const std::vector<nlohmann::json>& records, const AuditVerdict& verdict,
                       const std::string& source);

}  // namespace moat::sessions
