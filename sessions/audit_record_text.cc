// sessions/audit_record_text.cc: every audit record type in a person's words, one row each in
// kRenderers.
#include "sessions/audit_record_text.h"

#include <cstdio>
#include <utility>

#include "sessions/audit_text.h"
#include "sessions/byte_strings.h"
#include "sessions/json_util.h"

namespace moat::sessions {
namespace {

using nlohmann::json;

// A record's further lines start under its text, past the seq column.
constexpr const char* kMore = "\n      ";

// The chain's own fields (sessions/audit.h): every record has them, and `show` prints seq, ts
// and type in columns of their own.
constexpr const char* kChainFields[] = {"v", "seq", "ts", "type", "session", "id", "prev", "hash"};

// Text as text (host bytes as \xNN), anything else as compact JSON.
std::string value_text(const json& v) {
  if (v.is_string() || (v.is_object() && v.contains("bytes"))) return display_text(v);
  return dump_json(v);
}

std::string field_text(const json& r, const char* key) {
  return r.is_object() && r.contains(key) && !r[key].is_null() ? value_text(r[key]) : "";
}

void add(std::string& out, const std::string& part, const char* sep = ", ") {
  if (!part.empty()) out += (out.empty() ? "" : sep) + part;
}

std::string labelled(const json& r, const char* key, const std::string& label) {
  const std::string v = field_text(r, key);
  return v.empty() ? "" : label + " " + v;
}

// "org.x (system layer, /etc/moat/policy.d/00.toml:12)" from a rule object, or a plain id.
std::string rule_text(const json& rule, const std::string& layer = "") {
  if (!rule.is_object()) {  // a net record's rule is its id, with the layer beside it
    if (!rule.is_string()) return "";
    return rule.get<std::string>() + (layer.empty() ? "" : " (" + layer + " layer)");
  }
  std::string where = layer.empty() ? str_field(rule, "layer") : layer;
  if (!where.empty()) where += " layer";
  if (!str_field(rule, "file").empty())
    add(where, str_field(rule, "file") +
                   (int_field(rule, "line", 0) > 0 ? ":" + std::to_string(int_field(rule, "line"))
                                                   : ""));
  const std::string id = str_field(rule, "id");
  return where.empty() ? id : id + " (" + where + ")";
}

// "user me (uid 1000, gid 1000), pid 41" from session.start's or session.refused's peer.
std::string peer_text(const json& peer) {
  std::string ids = labelled(peer, "uid", "uid");
  add(ids, labelled(peer, "gid", "gid"));
  std::string out = "user " + (str_field(peer, "user").empty() ? "?" : str_field(peer, "user")) +
                    " (" + ids + ")";
  add(out, labelled(peer, "pid", "pid"));
  return out;
}

std::string decision_text(const json& r, const AuditView*) {
  std::string out = " " + str_field(r, "result") + "  " + action_of(r);
  const json none;
  std::string why = rule_text(r.contains("deciding_rule") ? r["deciding_rule"] : none);
  add(why, decided_text(r), "; ");
  if (r.contains("matched") && r["matched"].is_array() && r["matched"].size() > 1)
    add(why, "matched " + value_text(r["matched"]), "; ");
  add(why, field_text(r, "reason"), ": ");
  if (!why.empty()) out += "  (" + why + ")";
  std::string more = labelled(r, "units", "units");
  add(more, labelled(r, "mode", "mode"));
  add(more, labelled(r, "channel", "channel"));
  return more.empty() ? out : out + "  [" + more + "]";
}

// A call's subject: its command or path; an old per-call exec names only its processes.
std::string call_action(const json& r) {
  std::string out = action_of(r);
  if (out == str_field(r, "tool") && r.contains("processes") && r["processes"].is_array() &&
      !r["processes"].empty())
    out += "  " + action_of(r["processes"][0]);
  return out;
}

// "exit 1, 47 ms, 3 programs (1 refused, 1 flagged), 120 bytes out, cancelled by the person
// (signal 9 is how moatd stopped it)  (org.x; allowed by the user, once, after 4.5 s)"
std::string call_outcome(const json& r, const AuditView* view) {
  std::string out = exit_text(r);
  add(out, duration_text(r));
  if (int_field(r, "execs", 0) > 0) {
    std::string counts;
    if (int_field(r, "refused_execs", 0) > 0)
      counts = std::to_string(int_field(r, "refused_execs")) + " refused";
    if (int_field(r, "flagged_execs", 0) > 0)
      add(counts, std::to_string(int_field(r, "flagged_execs")) + " ran flagged");
    add(out, std::to_string(int_field(r, "execs")) + " programs" +
                 (counts.empty() ? "" : " (" + counts + ")"));
  }
  if (int_field(r, "output_bytes", 0) > 0)
    add(out, std::to_string(int_field(r, "output_bytes")) + " bytes out");
  // moatd's record says who cancelled (sandbox/running_calls.h); the signal is how it stopped.
  if (const std::string by = field_text(r, "cancelled"); !by.empty())
    add(out, by == "person" ? "cancelled by the person"
             : by == "session end" ? "cancelled by the session's end"
                                   : "cancelled (" + by + ")");
  if (r.value("timedOut", false)) add(out, "timed out");
  const json* d = view ? view->decision(str_field(r, "decision_id")) : nullptr;
  if (d == nullptr) return out;
  std::string why = rule_of(*d);
  add(why, decided_text(*d), "; ");
  return why.empty() ? out : out + "  (" + why + ")";
}

// One line each for what a call or session.end removed (nested_git_removed).
std::string nested_git_lines(const json& r) {
  if (!r.contains("nested_git_removed") || !r["nested_git_removed"].is_array()) return "";
  std::string out;
  for (const auto& g : r["nested_git_removed"])
    out += kMore + std::string(g.value("removed", false) ? "removed " : "could not remove ") +
           field_text(g, "type") + " " + field_text(g, "path") +
           (field_text(g, "error").empty() ? "" : ": " + field_text(g, "error"));
  if (!out.empty()) out += kMore + ("(" + field_text(r, "nested_git_reason") + ")");
  return out;
}

std::string call_text(const json& r, const AuditView* view) {
  std::string out = " " + call_action(r) + "  " + call_outcome(r, view);
  for (const auto& f : files_touched(r)) out += kMore + ("wrote " + f);
  if (r.contains("flagged") && r["flagged"].is_array())
    for (const auto& f : r["flagged"])
      out += kMore + ("ran flagged " + action_of(f) + " (rule " + field_text(f, "rule") + ")");
  return out + nested_git_lines(r);
}

// An exec row: the program as its call's tree draws it, then what identifies it.
std::string exec_row_text(const json& r, const AuditView* view) {
  if (!r.contains("exec_id")) return call_text(r, view);  // an old log's per-call record
  std::string out = " " + exec_text({&r, nullptr, {}});
  std::string more = labelled(r, "exec_id", "id");
  add(more, labelled(r, "parent_exec", "parent"));
  add(more, labelled(r, "pid", "pid"));
  add(more, labelled(r, "exe", "exe"));
  add(more, labelled(r, "cwd", "cwd"));
  add(more, labelled(r, "runs", "runs"));
  add(more, labelled(r, "loads", "loads"));
  add(more, labelled(r, "flagged", "flagged by"));
  if (r.value("unnamed", false)) add(more, "unnamed, sha256 " + field_text(r, "sha256"));
  add(more, labelled(r, "memory", "memory"));
  return out + "  [" + more + "]";
}

std::string exec_end_text(const json& r, const AuditView* view) {
  const json* exec = view ? view->exec_of(r) : nullptr;
  std::string how = exit_text(r);
  add(how, duration_text(r));
  add(how, field_text(r, "note"));
  return " " + (exec ? action_of(*exec) : str_field(r, "exec_id")) + "  " + how;
}

std::string checkpoint_text(const json& r, const AuditView*) {
  return " signs seq 1-" + std::to_string(int_field(r, "count")) + " (head " +
         field_text(r, "head") + ") with " + str_field(r, "key_id");
}

std::string session_start_text(const json& r, const AuditView*) {
  // moatd writes moat_version; the workspace may be host bytes ({"bytes": base64}).
  const std::string version = str_field(r, "moat_version").empty() ? str_field(r, "version")
                                                                   : str_field(r, "moat_version");
  std::string who = r.contains("peer") ? peer_text(r["peer"]) : "";
  add(who, labelled(r, "host", "on host"), " ");
  std::string how = r.value("interactive", false) ? "interactive" : "headless";
  add(how, labelled(r, "console", "console"));
  add(how, labelled(r, "exec_typed_by", "exec lines typed by"));
  add(how, labelled(r, "audit_signing", "signing"));
  std::string out = " moat " + version + " " + field_text(r, "workspace") + "  " +
                    (who.empty() ? how : who + "; " + how);
  if (r.contains("layers") && r["layers"].is_array())
    for (const auto& l : r["layers"])
      out += kMore + ("policy " + field_text(l, "layer") + " " + field_text(l, "name") + " rev " +
                      field_text(l, "revision") + " " + field_text(l, "file") + " sha256 " +
                      field_text(l, "sha256"));
  for (const auto& [key, label] :
       {std::pair{"project_policy", "project policy"}, {"sandbox", "sandbox"}, {"binds", "binds"},
        {"tools", "tools"}, {"file_index", "file index"}, {"agents_md", "read into the prompt"}})
    if (!field_text(r, key).empty()) out += kMore + (std::string(label) + " " + field_text(r, key));
  return out;
}

std::string session_end_text(const json& r, const AuditView*) {
  std::string out = labelled(r, "calls", "calls");
  if (r.contains("duration_s") && r["duration_s"].is_number()) {
    char buf[48];
    std::snprintf(buf, sizeof buf, "%.1f s", r["duration_s"].get<double>());
    add(out, buf);
  }
  return " " + out + nested_git_lines(r);
}

std::string session_refused_text(const json& r, const AuditView*) {
  return " refused: " + field_text(r, "reason") +
         (r.contains("peer") ? "  (" + peer_text(r["peer"]) + ")" : "");
}

std::string backlog_text(const json& r, const AuditView*) {
  return " execs held back: the record queue's bound of " + std::to_string(int_field(r, "bound")) +
         " was reached, for " + std::to_string(int_field(r, "held_ms")) + " ms";
}

std::string net_row_text(const json& r, const AuditView* view) { return " " + net_text(r, view); }

// Every type moatd writes (docs/sessions.md), and audit.backlog of older logs. A new type
// needs a row here: the test over the documented types fails without one.
struct RecordRenderer {
  std::string_view type;
  std::string (*text)(const json& record, const AuditView* view);
};
constexpr RecordRenderer kRenderers[] = {
    {"session.start", session_start_text}, {"session.refused", session_refused_text},
    {"decision", decision_text},           {"call", call_text},
    {"exec", exec_row_text},               {"exec.end", exec_end_text},
    {"net", net_row_text},                 {"checkpoint", checkpoint_text},
    {"session.end", session_end_text},     {"audit.backlog", backlog_text},
};

// A record of a type without a renderer: its fields, so nothing it holds is hidden.
std::string unknown_text(const json& r) {
  json fields = r;
  for (const char* key : kChainFields) fields.erase(key);
  return " " + dump_json(fields);
}

}  // namespace

std::string line_text(std::string_view s, size_t width) {
  std::string out;
  for (unsigned char c : s) {
    if (out.size() >= width) return out + "...";
    if (c < 0x20 || c == 0x7f) out += ' ';  // a record must not move the reader's cursor
    else out += static_cast<char>(c);
  }
  return out;
}

std::string net_text(const json& r, const AuditView* view) {
  std::string out = str_field(r, "method") + " " + field_text(r, "host") + ":" +
                    field_text(r, "port") + " -> " +
                    (field_text(r, "address").empty() ? "?" : field_text(r, "address")) + "  " +
                    str_field(r, "decision");
  std::string why = rule_text(r.value("rule", json()), str_field(r, "layer"));
  if (r.contains("user"))
    add(why, decided_text({{"decided_by", "user"}, {"input", {{"user", r["user"]}}}}), "; ");
  if (!why.empty()) out += " (" + why + ")";
  std::string how = labelled(r, "bytes_up", "up");
  if (!how.empty()) how += " B";
  if (!field_text(r, "bytes_down").empty()) add(how, "down " + field_text(r, "bytes_down") + " B");
  if (!field_text(r, "duration_ms").empty()) add(how, field_text(r, "duration_ms") + " ms");
  add(how, labelled(r, "error", "error:"));
  if (r.contains("count"))
    add(how, field_text(r, "count") + " connections from " + field_text(r, "first_ts") + " to " +
                 field_text(r, "last_ts") + ", " + field_text(r, "errors") + " with errors");
  const json* exec = view && r.contains("exec_id") ? view->exec_of(r) : nullptr;
  std::string by = labelled(r, "call_id", "call");
  add(by, labelled(r, "exec_id", "program"));
  if (exec != nullptr) add(by, action_of(*exec), " ");
  add(by, labelled(r, "pid", "pid"));
  add(by, labelled(r, "program_error", "program not known:"));
  return line_text(out + "  " + how + (by.empty() ? "" : "  by " + by), 600);
}

bool has_record_text(std::string_view type) {
  for (const RecordRenderer& row : kRenderers)
    if (row.type == type) return true;
  return false;
}

std::string record_text(const json& r, const AuditView* view) {
  const std::string type = str_field(r, "type");
  std::string text = unknown_text(r);
  for (const RecordRenderer& row : kRenderers)
    if (row.type == type) text = row.text(r, view);
  // Control characters out, line by line: a record must not move the reader's cursor.
  std::string out;
  size_t from = 0;
  for (size_t nl = text.find(kMore); ; nl = text.find(kMore, from)) {
    out += line_text(std::string_view(text).substr(from, nl - from), 2000);
    if (nl == std::string::npos) return out;
    out += kMore;
    from = nl + std::string_view(kMore).size();
  }
}

}  // namespace moat::sessions
