// sessions/render_audit.cc: audit timeline as text and as an HTML page.
#include "sessions/render_audit.h"

#include <cstdio>
#include <map>
#include <set>

#include "sessions/byte_strings.h"
#include "sessions/json_util.h"
#include "sessions/jsonl.h"
#include "sessions/render_session.h"

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

std::string audit_html(const std::vector<json>& records, const AuditVerdict& verdict,
                       const std::string& source) {
  std::map<std::string, int> by_result;
  std::set<std::string> files;
  for (const auto& r : records) {
    if (str_field(r, "type") == "decision") ++by_result[str_field(r, "result")];
    for (const auto& f : files_touched(r)) files.insert(f);
  }
  const std::string session = records.empty() ? "" : str_field(records.front(), "session");
  std::string out =
      "<!doctype html>\n<html><head><meta charset=\"utf-8\">"
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src "
      "'unsafe-inline'\">"
      "<title>moat audit " +
      html_escape(session) +
      "</title><style>"
      "body{font-family:system-ui,sans-serif;margin:2rem;color:#222}"
      "table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #ddd;padding:.3rem;"
      "text-align:left;vertical-align:top;font-size:.9rem}code{white-space:pre-wrap}"
      ".deny{background:#fde8e8}.ask{background:#fff6db}.allow{background:#ecf8ee}"
      ".ok{color:#1a7f37}.bad{color:#c00;font-weight:bold}</style></head><body>\n"
      "<h1>Audit of session " +
      html_escape(session) + "</h1>\n<p>" + html_escape(source) + "</p>\n";
  const std::string signed_note =
      verdict.checkpoints == 0
          ? " No signed checkpoints."
          : " Signed through seq " + std::to_string(verdict.signed_through) + " by " +
                html_escape(verdict.key_id) +
                (verdict.key_trusted
                     ? "."
                     : " (the key the log names; check it with moat audit verify --key).");
  out += verdict.ok()
             ? "<p class=\"ok\">Chain verified: " + std::to_string(verdict.records) + " records." +
                   signed_note + "</p>\n"
             : "<p class=\"bad\">Chain BROKEN (" + std::string(problem_name(verdict.problem)) +
                   ") at seq " + std::to_string(verdict.seq) + ", byte " +
                   std::to_string(verdict.offset) + ": " + html_escape(verdict.detail) + "</p>\n";
  out += "<h2>Decisions</h2><p>";
  for (const auto& [result, n] : by_result)
    out += html_escape(result) + ": " + std::to_string(n) + " &nbsp; ";
  out += "</p>\n<h2>Files touched</h2><ul>";
  for (const auto& f : files) out += "<li><code>" + html_escape(f) + "</code></li>";
  out +=
      "</ul>\n<h2>Timeline</h2>\n<table><tr><th>seq</th><th>time</th><th>type</th><th>action</th>"
      "<th>outcome</th><th>rule</th></tr>\n";
  for (const auto& r : records) {
    const std::string type = str_field(r, "type");
    const std::string result = str_field(r, "result");
    std::string outcome = type == "decision" ? result : type == "exec" ? exit_text(r) : "";
    if (type == "exec" && !duration_text(r).empty()) outcome += ", " + duration_text(r);
    for (const auto& f : files_touched(r)) outcome += "\nwrote " + f;
    out += "<tr class=\"" + html_escape(type == "decision" ? result : "") + "\"><td>" +
           std::to_string(int_field(r, "seq")) + "</td><td>" + html_escape(str_field(r, "ts")) +
           "</td><td>" + html_escape(type) + "</td><td><code>" + html_escape(action_of(r)) +
           "</code></td><td><code>" + html_escape(outcome) + "</code></td><td>" +
           html_escape(rule_of(r)) + "</td></tr>\n";
  }
  return out + "</table>\n</body></html>\n";
}

}  // namespace moat::sessions
