// sessions/render_audit.cc: `moat audit show`'s rows (the page is sessions/audit_html.cc).
#include "sessions/render_audit.h"

#include <cstdio>

#include "sessions/audit_record_text.h"
#include "sessions/byte_strings.h"
#include "sessions/json_util.h"
#include "sessions/jsonl.h"

namespace moat::sessions {
namespace {

using nlohmann::json;

// Indentation of an exec tree under its call row (past the seq column).
constexpr const char* kTreeIndent = "        ";

bool is_call_record(const json& r) {
  const std::string type = str_field(r, "type");
  return type == "call" || (type == "exec" && !r.contains("exec_id"));
}

// Whether tree mode draws `r` under its call instead of as a row of its own.
bool drawn_in_tree(const json& r, const AuditView& view) {
  const std::string type = str_field(r, "type");
  if (type != "exec.end" && (type != "exec" || !r.contains("exec_id"))) return false;
  const CallView* call = view.call_of(r);
  return call != nullptr && call->call != nullptr;
}

std::string with_session(const json& r, std::string text) {
  const std::string session = line_text(str_field(r, "session"), 40);
  const std::string pad(session.size() + 1, ' ');
  for (size_t at = text.find('\n'); at != std::string::npos; at = text.find('\n', at + 1))
    text.insert(at + 1, pad);
  return session + " " + text;
}

}  // namespace

Result<std::vector<json>> load_audit_records(const std::string& path) {
  MOAT_ASSIGN_OR_RETURN(std::string data, read_file(path));
  std::vector<json> out;
  for (const Line& line : whole_lines(data)) {
    json r = parse_json(line.text);
    if (!r.is_discarded() && r.is_object()) out.push_back(std::move(r));
  }
  return out;
}

bool audit_matches(const json& r, const AuditFilter& f) {
  if (!f.session.empty() && str_field(r, "session").rfind(f.session, 0) != 0) return false;
  if (!f.type.empty() && str_field(r, "type") != f.type) return false;
  if (!f.decision.empty() &&
      (str_field(r, "type") != "decision" || str_field(r, "result") != f.decision))
    return false;
  return true;
}

std::string audit_line(const json& r, const AuditView* view) {
  const std::string type = str_field(r, "type");
  char head[96];
  std::snprintf(head, sizeof head, "%5lld %-30s %-14s", static_cast<long long>(int_field(r, "seq")),
                line_text(str_field(r, "ts"), 30).c_str(), line_text(type, 15).c_str());
  return head + record_text(r, view);
}

std::vector<AuditRow> audit_rows(const std::vector<json>& records, size_t verified,
                                 const AuditShowOptions& o) {
  const AuditView view(records);
  std::vector<AuditRow> rows;
  for (size_t i = 0; i < records.size(); ++i) {
    const json& r = records[i];
    if (!audit_matches(r, o.filter)) continue;
    if (o.json) {
      rows.push_back({str_field(r, "ts"), dump_json(r)});
      continue;
    }
    if (o.tree && o.filter.type.empty() && drawn_in_tree(r, view)) continue;
    std::string text = audit_line(r, &view);
    if (i >= verified) text += "  [unverified]";
    if (o.tree && is_call_record(r))
      for (const auto& line : exec_tree_lines(*view.call_of(r), kTreeIndent))
        text += "\n" + line_text(line, 400);
    rows.push_back({str_field(r, "ts"), o.session_column ? with_session(r, text) : text});
  }
  return rows;
}

}  // namespace moat::sessions
