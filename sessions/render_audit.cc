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

// Argv or the tool's subject: what a reviewer recognises the action by.
std::string action_of(const json& r) {
  const json* argv = nullptr;
  if (r.contains("argv") && r["argv"].is_array()) argv = &r["argv"];
  else if (r.contains("input") && r["input"].is_object() && r["input"].contains("argv") &&
           r["input"]["argv"].is_array())
    argv = &r["input"]["argv"];
  std::string out = str_field(r, "tool");
  if (argv != nullptr) {
    out.clear();
    for (const auto& a : *argv) {
      // A word that is not UTF-8 is recorded as {"bytes": base64} and shown with \xNN.
      const std::string text = display_text(a);
      out += (out.empty() ? "" : " ") + (a.is_string() || !text.empty() ? text : dump_json(a));
    }
    return out;
  }
  const json& in = r.contains("input") && r["input"].is_object() ? r["input"] : r;
  for (const char* key : {"path", "command", "host"})
    if (in.contains(key) && !display_text(in[key]).empty())
      return out + " " + display_text(in[key]);
  return out;
}

std::string rule_of(const json& r) {
  if (r.contains("deciding_rule") && r["deciding_rule"].is_object())
    return str_field(r["deciding_rule"], "id");
  return str_field(r, "rule");
}

// exit code / signal / limit, from either the POLICY.md shape (exit:{code,signal,limit}) or
// the flat one moatd writes (exitCode, signal, limit).
std::string exit_of(const json& r) {
  const json& ex = r.contains("exit") && r["exit"].is_object() ? r["exit"] : r;
  std::string out;
  for (const char* key : {"code", "exitCode"})
    if (ex.contains(key) && ex[key].is_number_integer())
      out = "exit " + std::to_string(ex[key].get<int64_t>());
  if (ex.contains("signal") && !ex["signal"].is_null())
    out += (out.empty() ? "" : ", ") + std::string("signal ") +
           (ex["signal"].is_string() ? ex["signal"].get<std::string>() : dump_json(ex["signal"]));
  if (ex.contains("limit") && ex["limit"].is_string())
    out += (out.empty() ? "" : ", ") + std::string("killed by ") + ex["limit"].get<std::string>() +
           " limit";
  if (out.empty() && r.contains("is_error") && r["is_error"].is_boolean())
    out = r["is_error"].get<bool>() ? "error" : "ok";
  return out;
}

std::string duration_of(const json& r) {
  if (!r.contains("duration_ms") || !r["duration_ms"].is_number()) return "";
  return std::to_string(r["duration_ms"].get<int64_t>()) + " ms";
}

std::string clean(std::string_view s, size_t width) {
  std::string out;
  for (unsigned char c : s) {
    if (out.size() >= width) return out + "...";
    if (c < 0x20 || c == 0x7f) out += ' ';  // a record must not move the reader's cursor
    else out += static_cast<char>(c);
  }
  return out;
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

std::vector<std::string> files_touched(const json& r) {
  std::vector<std::string> out;
  for (const char* key : {"filesMutated", "files_mutated"}) {
    if (!r.contains(key) || !r[key].is_array()) continue;
    for (const auto& f : r[key]) {
      if (f.is_string() || f.contains("bytes")) out.push_back(display_text(f));
      else if (!str_field(f, "path").empty())
        out.push_back(str_field(f, "path") +
                      (str_field(f, "op").empty() ? "" : " (" + str_field(f, "op") + ")"));
    }
  }
  return out;
}

std::string audit_line(const json& r) {
  const std::string type = str_field(r, "type");
  char head[96];
  std::snprintf(head, sizeof head, "%5lld %-30s %-14s", static_cast<long long>(int_field(r, "seq")),
                clean(str_field(r, "ts"), 30).c_str(), clean(type, 14).c_str());
  std::string out = head;
  if (type == "decision") {
    out += " " + str_field(r, "result") + "  " + clean(action_of(r), 100);
    if (!rule_of(r).empty()) out += "  (" + clean(rule_of(r), 60) + ")";
  } else if (type == "exec") {
    out += " " + clean(action_of(r), 100) + "  " + exit_of(r);
    if (!duration_of(r).empty()) out += ", " + duration_of(r);
    for (const auto& f : files_touched(r)) out += "\n      wrote " + clean(f, 200);
  } else if (type == "session.start") {
    // moatd writes moat_version; the workspace may be host bytes ({"bytes": base64}).
    const std::string version = str_field(r, "moat_version").empty() ? str_field(r, "version")
                                                                     : str_field(r, "moat_version");
    out +=
        " " +
        clean(version + " " + (r.contains("workspace") ? display_text(r["workspace"]) : ""), 200);
  } else if (type == "checkpoint") {
    out += " signs seq 1-" + std::to_string(int_field(r, "count")) + " with " +
           clean(str_field(r, "key_id"), 40);
  }
  return out;
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
    std::string outcome = type == "decision" ? result : type == "exec" ? exit_of(r) : "";
    if (type == "exec" && !duration_of(r).empty()) outcome += ", " + duration_of(r);
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
