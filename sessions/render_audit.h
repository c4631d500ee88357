// sessions/render_audit.h: audit records for people: `moat audit show`'s rows (a filtered
// timeline, each call's exec tree, JSON lines) and the HTML page of one session.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>
#include <vector>

#include "base/result.h"
#include "sessions/audit_text.h"
#include "sessions/audit_verify.h"
#include "sessions/audit_view.h"

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

// "   17 2026-03-04T10:15:02.118Z decision   deny  bash git push -f  (org.no-force-push)".
// With `view` (the record's log), a call row names its decision's rule and who decided, and
// an exec.end row the program it ends.
std::string audit_line(const nlohmann::json& record, const AuditView* view = nullptr);

struct AuditShowOptions {
  AuditFilter filter;
  bool tree = false;            // each call row is followed by its exec tree
  bool json = false;            // the records themselves, one JSON object per line
  bool session_column = false;  // each row starts with its session id (several files)
};

// One row of `moat audit show`: its text (with a call's tree, several lines) and its ts.
struct AuditRow {
  std::string ts;
  std::string text;
};

// The rows of one file's records. Records from index `verified` on did not verify: their
// rows are marked "[unverified]" (not in JSON, which prints the records as they are). In tree
// mode a program's exec and exec.end records are drawn under their call instead of as rows.
std::vector<AuditRow> audit_rows(const std::vector<nlohmann::json>& records, size_t verified,
                                 const AuditShowOptions& options);

// A self-contained HTML timeline of `records` (one session), headed by the chain verdict.
std::string audit_html(const std::vector<nlohmann::json>& records, const AuditVerdict& verdict,
                       const std::string& source);

}  // namespace moat::sessions
