// sessions/audit_html.cc: one session's audit log as a self-contained, filterable HTML page.
#include <map>
#include <set>

#include "sessions/audit_record_text.h"
#include "sessions/byte_strings.h"
#include "sessions/json_util.h"
#include "sessions/render_audit.h"
#include "sessions/render_session.h"

namespace moat::sessions {
namespace {

using nlohmann::json;

// No network and no other file: the page is read offline, possibly long after the session.
// Inline style and script only; CSP forbids everything else.
constexpr const char* kHead =
    "<!doctype html>\n<html><head><meta charset=\"utf-8\">"
    "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src "
    "'unsafe-inline'; script-src 'unsafe-inline'\">";

constexpr const char* kStyle =
    "<style>"
    "body{font-family:system-ui,sans-serif;margin:2rem;color:#222}"
    "table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #ddd;padding:.3rem;"
    "text-align:left;vertical-align:top;font-size:.9rem}code{white-space:pre-wrap}"
    ".deny{background:#fde8e8}.ask{background:#fff6db}.allow{background:#ecf8ee}"
    ".ok{color:#1a7f37}.bad{color:#c00;font-weight:bold}"
    ".call{border:1px solid #ccc;border-radius:4px;margin:.8rem 0;padding:.5rem 1rem}"
    ".call h3{margin:.2rem 0;font-size:1rem}.who{color:#555}"
    "ul.tree{list-style:none;padding-left:1.2rem;margin:.2rem 0}"
    "li.exec{font-family:monospace;font-size:.85rem;background:none}"
    "li.exec.deny>span.prog{color:#c00;font-weight:bold}"
    "ul.nets{padding-left:1.2rem;margin:.2rem 0}li.net.deny{color:#c00}"
    ".filters label{margin-right:1rem}</style>";

// Hides what does not match the three filters; reads initial values from the URL's fragment
// (#decision=deny&type=call&program=curl) so a filtered view can be linked to.
constexpr const char* kScript = R"JS(<script>
(function () {
  var f = {decision: document.getElementById('f-decision'), type: document.getElementById('f-type'),
           program: document.getElementById('f-program')};
  function apply() {
    var d = f.decision.value, t = f.type.value, p = f.program.value.trim(), shown = 0, all = 0;
    document.querySelectorAll('[data-type]').forEach(function (e) {
      var programs = ' ' + (e.getAttribute('data-programs') || '') + ' ';
      var ok = (!d || e.getAttribute('data-decision') === d) &&
               (!t || e.getAttribute('data-type') === t) &&
               (!p || programs.indexOf(' ' + p + ' ') >= 0);
      e.style.display = ok ? '' : 'none';
      all++; if (ok) shown++;
    });
    document.getElementById('shown').textContent = shown + ' of ' + all + ' shown';
  }
  location.hash.replace(/^#/, '').split('&').forEach(function (kv) {
    var i = kv.indexOf('='), k = decodeURIComponent(kv.slice(0, i)), v = decodeURIComponent(kv.slice(i + 1));
    if (i > 0 && f[k]) f[k].value = v;
  });
  ['change', 'input'].forEach(function (ev) {
    Object.keys(f).forEach(function (k) { f[k].addEventListener(ev, apply); });
  });
  apply();
})();
</script>)JS";

std::string esc(const std::string& s) { return html_escape(s); }

std::string attr_of(const json& j) { return esc(display_text(j)); }

// "curl" for argv ["/usr/bin/curl", ...]: what the program filter matches.
std::string program_name(const json& exec) {
  if (!exec.contains("argv") || !exec["argv"].is_array() || exec["argv"].empty()) return "";
  const std::string argv0 = display_text(exec["argv"][0]);
  const size_t slash = argv0.rfind('/');
  return slash == std::string::npos ? argv0 : argv0.substr(slash + 1);
}

std::string verdict_html(const AuditVerdict& v) {
  const std::string signed_note =
      v.checkpoints == 0
          ? " No signed checkpoints."
          : " Signed through seq " + std::to_string(v.signed_through) + " by " + esc(v.key_id) +
                (v.key_trusted
                     ? "."
                     : " (the key the log names; check it with moat audit verify --key).");
  if (v.ok())
    return "<p class=\"ok\">Chain verified: " + std::to_string(v.records) + " records." +
           signed_note + "</p>\n";
  return "<p class=\"bad\">Chain BROKEN (" + std::string(problem_name(v.problem)) + ") at seq " +
         std::to_string(v.seq) + ", byte " + std::to_string(v.offset) + ": " + esc(v.detail) +
         ". Records from there on are not trustworthy.</p>\n";
}

// session.start's policy layers, sandbox layers and signing key.
std::string session_html(const json& start, const AuditVerdict& v) {
  // Who ran it, on which host, how: session.start's first line as `moat audit show` prints it.
  std::string started = record_text(start);
  started = started.substr(1, started.find('\n') - 1);
  std::string out = "<h2>Session</h2>\n<p id=\"session-start\"><code>" + esc(started) +
                    "</code></p>\n";
  out +=
      "<h3>Policy layers</h3><table id=\"policy-layers\"><tr><th>layer</th><th>name</th>"
      "<th>revision</th><th>file</th><th>sha256</th></tr>";
  if (start.contains("layers") && start["layers"].is_array())
    for (const auto& l : start["layers"]) {
      out += "<tr>";
      for (const char* key : {"layer", "name", "revision", "file", "sha256"})
        out += "<td><code>" +
               esc(l.contains(key) && !l[key].is_string() ? dump_json(l[key]) : str_field(l, key)) +
               "</code></td>";
      out += "</tr>";
    }
  out += "</table>\n<h3>Sandbox layers</h3><table id=\"sandbox-layers\">";
  if (start.contains("sandbox") && start["sandbox"].is_object())
    for (const auto& [key, value] : start["sandbox"].items())
      out += "<tr><th>" + esc(key) + "</th><td><code>" +
             esc(value.is_string() ? value.get<std::string>() : dump_json(value)) +
             "</code></td></tr>";
  out += "</table>\n<h3>Signing key</h3><p id=\"signing-key\">";
  if (!v.key_id.empty())
    out += "<code>" + esc(v.key_id) + "</code>" +
           (v.key_trusted ? " (the key you gave)" : " (the key the log names)");
  else out += "none: " + esc(str_field(start, "audit_signing"));
  return out + "</p>\n";
}

std::string exec_li(const CallView& call, size_t n) {
  const ExecNode& node = call.execs[n];
  const std::string result = str_field(*node.exec, "result");
  std::string out = "<li class=\"exec " + esc(result == "deny" ? "deny" : "allow") +
                    "\" data-program=\"" + esc(program_name(*node.exec)) +
                    "\"><span class=\"prog\">" + esc(exec_text(node)) + "</span>";
  if (!node.children.empty()) {
    out += "<ul class=\"tree\">";
    for (size_t c : node.children) out += exec_li(call, c);
    out += "</ul>";
  }
  return out + "</li>";
}

std::string size_cell(const json& side) {
  if (!side.is_object()) return "-";
  return std::to_string(int_field(side, "size")) + " B" +
         (str_field(side, "sha256").empty()
              ? ""
              : " <code title=\"" + esc(str_field(side, "sha256")) + "\">" +
                    esc(str_field(side, "sha256").substr(0, 12)) + "</code>");
}

std::string files_html(const json& call) {
  if (!call.contains("files_changed") || !call["files_changed"].is_array() ||
      call["files_changed"].empty()) {
    if (!str_field(call, "files_changed_error").empty())
      return "<p>Files changed: not known (" + esc(str_field(call, "files_changed_error")) +
             ")</p>";
    return "";
  }
  std::string out =
      "<table class=\"files\"><tr><th>op</th><th>path</th><th>before</th>"
      "<th>after</th><th>+/- bytes</th></tr>";
  for (const auto& f : call["files_changed"]) {
    const json none;
    const json& before = f.contains("before") ? f["before"] : none;
    const json& after = f.contains("after") ? f["after"] : none;
    const int64_t delta = int_field(after, "size") - int_field(before, "size");
    std::string path = f.contains("path") ? attr_of(f["path"]) : "";
    if (f.contains("from")) path = attr_of(f["from"]) + " &rarr; " + path;
    out += "<tr class=\"file\"><td>" + esc(str_field(f, "op")) + "</td><td><code>" + path +
           "</code></td><td>" + size_cell(before) + "</td><td>" + size_cell(after) + "</td><td>" +
           (delta >= 0 ? "+" : "") + std::to_string(delta) + "</td></tr>";
  }
  if (call.value("files_changed_truncated", false))
    out += "<tr><td colspan=\"5\">... the list was capped</td></tr>";
  return out + "</table>";
}

// The connections the call's programs opened, each as `show` prints its net record.
std::string nets_html(const CallView& c) {
  if (c.nets.empty()) return "";
  std::string out = "<ul class=\"nets\">";
  for (const json* n : c.nets)
    out += "<li class=\"net " + esc(str_field(*n, "decision") == "allow" ? "allow" : "deny") +
           "\"><code>" + esc(net_text(*n)) + "</code></li>";
  return out + "</ul>";
}

// The call's command or path. An old log's per-call record names only its tool: then the
// first of its decisions that names more (the command, or a file tool's path) does.
std::string heading(const json& head, const CallView& c) {
  const std::string action = action_of(head);
  if (action != str_field(head, "tool")) return action;
  for (const json* d : c.decisions)
    if (action_of(*d) != str_field(*d, "tool")) return action_of(*d);
  return action;
}

// One tool call: the decision and who made it, the exec tree, the files changed.
std::string call_html(const CallView& c, size_t index) {
  const json* d = c.decision ? c.decision : c.decisions.empty() ? nullptr : c.decisions.front();
  // A call is opened by its first record: a decision, a program, or the call record itself.
  const json& head = c.call ? *c.call : d ? *d : *c.execs.front().exec;
  const std::string result = d ? str_field(*d, "result") : "";
  std::string programs;
  for (const auto& e : c.execs) programs += (programs.empty() ? "" : " ") + program_name(*e.exec);
  std::string out = "<div class=\"call " + esc(result) + "\" id=\"call-" + std::to_string(index) +
                    "\" data-type=\"call\" data-decision=\"" + esc(result) + "\" data-programs=\"" +
                    esc(programs) + "\"><h3>" + esc(heading(head, c)) + "</h3><p><b>" +
                    esc(result.empty() ? "?" : result) + "</b> <span class=\"who\">" +
                    esc(d ? decided_text(*d) : "") +
                    (d && !rule_of(*d).empty() ? ", rule " + esc(rule_of(*d)) : "") + "</span>";
  if (c.call) {
    std::string how = exit_text(*c.call);
    if (!duration_text(*c.call).empty()) how += ", " + duration_text(*c.call);
    out += " &middot; " + esc(how);
  } else {
    out += " &middot; did not run";
  }
  out += "</p>";
  if (!c.roots.empty()) {
    out += "<ul class=\"tree\">";
    for (size_t r : c.roots) out += exec_li(c, r);
    out += "</ul>";
  }
  return out + (c.call ? files_html(*c.call) : "") + nets_html(c) + "</div>\n";
}

std::string filters_html() {
  return "<p class=\"filters\"><label>decision <select id=\"f-decision\"><option value=\"\">any"
         "</option><option>allow</option><option>deny</option><option>ask</option></select>"
         "</label><label>type <select id=\"f-type\"><option value=\"\">any</option>"
         "<option>call</option><option>decision</option><option>exec</option>"
         "<option>exec.end</option><option>net</option><option>session.start</option>"
         "<option>session.end</option><option>session.refused</option><option>checkpoint</option>"
         "</select></label><label>program <input id=\"f-program\" "
         "placeholder=\"curl\"></label><span id=\"shown\"></span></p>\n";
}

// `unverified`: the record is at or after the chain's break, so nothing vouches for it. The
// record's cell holds the words `moat audit show` prints for it (sessions/audit_record_text.h),
// so the page shows everything the log holds, whatever the type.
std::string timeline_row(const json& r, const AuditView& view, bool unverified) {
  const std::string type = str_field(r, "type");
  const CallView* call = view.call_of(r);
  std::string decision = type == "decision" ? str_field(r, "result") : "";
  if (type == "exec" && r.contains("exec_id")) decision = str_field(r, "result");
  else if (type == "net") decision = str_field(r, "decision");
  else if (call && call->call == &r && call->decision)
    decision = str_field(*call->decision, "result");
  const json* exec = type == "exec.end" || type == "net" ? view.exec_of(r) : nullptr;
  std::string text = record_text(r, &view);
  if (!text.empty() && text[0] == ' ') text.erase(0, 1);
  return "<tr class=\"" + esc(decision) + "\" data-type=\"" + esc(type) + "\" data-decision=\"" +
         esc(decision) + "\" data-programs=\"" + esc(program_name(exec ? *exec : r)) + "\"><td>" +
         std::to_string(int_field(r, "seq")) +
         (unverified ? " <span class=\"bad\">unverified</span>" : "") + "</td><td>" +
         esc(str_field(r, "ts")) + "</td><td>" + esc(type) + "</td><td><code>" + esc(text) +
         "</code></td><td>" + esc(rule_of(r)) + "</td></tr>\n";
}

}  // namespace

std::string audit_html(const std::vector<json>& records, const AuditVerdict& verdict,
                       const std::string& source) {
  const AuditView view(records);
  std::map<std::string, int> by_result;
  for (const auto& r : records)
    if (str_field(r, "type") == "decision") ++by_result[str_field(r, "result")];
  const std::string session = records.empty() ? "" : str_field(records.front(), "session");
  std::string out = std::string(kHead) + "<title>moat audit " + esc(session) + "</title>" + kStyle +
                    "</head><body>\n<h1>Audit of session " + esc(session) + "</h1>\n<p>" +
                    esc(source) + "</p>\n" + verdict_html(verdict);
  for (const auto& r : records)
    if (str_field(r, "type") == "session.start") out += session_html(r, verdict);
  out += "<h2>Decisions</h2><p>";
  for (const auto& [result, n] : by_result)
    out += esc(result) + ": " + std::to_string(n) + " &nbsp; ";
  out += "</p>\n" + filters_html() + "<h2>Tool calls</h2>\n";
  for (size_t i = 0; i < view.calls().size(); ++i) out += call_html(view.calls()[i], i);
  out +=
      "<h2>Timeline</h2>\n<table id=\"timeline\"><tr><th>seq</th><th>time</th><th>type</th>"
      "<th>record</th><th>rule</th></tr>\n";
  // The verified prefix: the chain walk stops at the first record that does not extend it.
  for (size_t i = 0; i < records.size(); ++i)
    out += timeline_row(records[i], view, !verdict.ok() && i >= verdict.records);
  return out + "</table>\n" + kScript + "</body></html>\n";
}

}  // namespace moat::sessions
