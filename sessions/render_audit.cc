// sessions/render_audit.cc: `moat audit show`'s rows (the page is sessions/audit_html.cc).
#include "sessions/render_audit.h"

#include <cstdio>

#include "sessions/byte_strings.h"
#include "sessions/json_util.h"
#include "sessions/jsonl.h"

namespace moat::sessions {
namespace {

using nlohmann::json;

// Indentation of an exec tree under its call row (past the seq column).
constexpr const char* kTreeIndent = "        ";

std::string clean(std::string_view s, size_t width) {
  std::string out;
  for (unsigned char c : s) {
    if (out.size() >= width) return out + "...";
    if (c < 0x20 || c == 0x7f) out += ' ';  // a record must not move the reader's cursor
    else out += static_cast<char>(c);
  }
  return out;
}

bool is_call_record(const json& r) {
  const std::string type = str_field(r, "type");
  return type == "call" || (type == "exec" && !r.contains("exec_id"));
}

// A call's subject: its command or path; an old per-call exec names only its processes.
std::string call_action(const json& r) {
  std::string out = action_of(r);
  if (out == str_field(r, "tool") && r.contains("processes") && r["processes"].is_array() &&
      !r["processes"].empty())
    out += "  " + action_of(r["processes"][0]);
  return out;
}

// "exit 1, 47 ms, 3 programs (1 refused)  (org.x; allowed by the user, once, after 4.5 s)"
std::string call_outcome(const json& r, const AuditView* view) {
  std::string out = exit_text(r);
  if (!duration_text(r).empty()) out += (out.empty() ? "" : ", ") + duration_text(r);
  if (int_field(r, "execs", 0) > 0) {
    out += ", " + std::to_string(int_field(r, "execs")) + " programs";
    if (int_field(r, "refused_execs", 0) > 0)
      out += " (" + std::to_string(int_field(r, "refused_execs")) + " refused)";
  }
  const json* d = view ? view->decision(str_field(r, "decision_id")) : nullptr;
  if (d == nullptr) return out;
  std::string why = rule_of(*d);
  if (!decided_text(*d).empty()) why += (why.empty() ? "" : "; ") + decided_text(*d);
  return why.empty() ? out : out + "  (" + clean(why, 120) + ")";
}

std::string decision_text(const json& r) {
  std::string out = " " + str_field(r, "result") + "  " + clean(action_of(r), 100);
  std::string why = rule_of(r);
  if (!decided_text(r).empty()) why += (why.empty() ? "" : "; ") + decided_text(r);
  if (!why.empty()) out += "  (" + clean(why, 120) + ")";
  return out;
}

std::string session_start_text(const json& r) {
  // moatd writes moat_version; the workspace may be host bytes ({"bytes": base64}).
  const std::string version =
      str_field(r, "moat_version").empty() ? str_field(r, "version") : str_field(r, "moat_version");
  return " " +
         clean(version + " " + (r.contains("workspace") ? display_text(r["workspace"]) : ""), 200);
}

// What follows the seq, ts and type columns, by record type.
std::string record_text(const json& r, const std::string& type, const AuditView* view) {
  if (type == "decision") return decision_text(r);
  if (type == "session.start") return session_start_text(r);
  if (type == "checkpoint")
    return " signs seq 1-" + std::to_string(int_field(r, "count")) + " with " +
           clean(str_field(r, "key_id"), 40);
  if (is_call_record(r)) {
    std::string out = " " + clean(call_action(r), 100) + "  " + call_outcome(r, view);
    for (const auto& f : files_touched(r)) out += "\n      wrote " + clean(f, 200);
    return out;
  }
  if (type == "exec") return " " + clean(exec_text({&r, nullptr, {}}), 300);
  if (type == "exec.end") {
    const json* exec = view ? view->exec_of(r) : nullptr;
    std::string how = exit_text(r);
    if (!duration_text(r).empty()) how += (how.empty() ? "" : ", ") + duration_text(r);
    return " " + clean(exec ? action_of(*exec) : str_field(r, "exec_id"), 100) + "  " + how;
  }
  if (type == "audit.backlog")
    return " execs held back: the record queue's bound of " +
           std::to_string(int_field(r, "bound")) + " was reached, for " +
           std::to_string(int_field(r, "held_ms")) + " ms";
  return "";
}

// Whether tree mode draws `r` under its call instead of as a row of its own.
bool drawn_in_tree(const json& r, const AuditView& view) {
  const std::string type = str_field(r, "type");
  if (type != "exec.end" && (type != "exec" || !r.contains("exec_id"))) return false;
  const CallView* call = view.call_of(r);
  return call != nullptr && call->call != nullptr;
}

std::string with_session(const json& r, std::string text) {
  const std::string session = clean(str_field(r, "session"), 40);
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
                clean(str_field(r, "ts"), 30).c_str(), clean(type, 14).c_str());
  return head + record_text(r, type, view);
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
        text += "\n" + clean(line, 400);
    rows.push_back({str_field(r, "ts"), o.session_column ? with_session(r, text) : text});
  }
  return rows;
}

}  // namespace moat::sessions
