// sessions/audit_text.cc: one audit record or program in a person's words.
#include "sessions/audit_text.h"

#include <cstdio>
#include <string_view>
#include <utility>

#include "sessions/byte_strings.h"
#include "sessions/json_util.h"

namespace moat::sessions {
namespace {

using nlohmann::json;

// A deep fork chain must not draw lines of ever-growing indentation: below this depth the
// tree is drawn flat (the parent is still the line above's ancestor).
constexpr size_t kMaxTreeIndent = 24;

const json* object_member(const json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_object()) return nullptr;
  return &j[key];
}

// "120 -> 140 bytes (+20)", "140 bytes" (created), "was 120 bytes" (deleted).
std::string size_change(const json& change) {
  const json* before = object_member(change, "before");
  const json* after = object_member(change, "after");
  const int64_t b = before ? int_field(*before, "size", -1) : -1;
  const int64_t a = after ? int_field(*after, "size", -1) : -1;
  if (b < 0 && a < 0) return "";
  if (b < 0) return std::to_string(a) + " bytes";
  if (a < 0) return "was " + std::to_string(b) + " bytes";
  const int64_t d = a - b;
  return std::to_string(b) + " -> " + std::to_string(a) + " bytes (" + (d >= 0 ? "+" : "") +
         std::to_string(d) + ")";
}

std::string file_change_text(const json& f) {
  const std::string op = str_field(f, "op");
  std::string path = f.contains("path") ? display_text(f["path"]) : "";
  if (op == "rename" && f.contains("from")) path = display_text(f["from"]) + " -> " + path;
  const std::string sizes = size_change(f);
  return (op.empty() ? "" : op + " ") + path + (sizes.empty() ? "" : "  " + sizes);
}

std::string seconds_text(int64_t ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f s", static_cast<double>(ms) / 1000.0);
  return buf;
}

// "allowed by the user, once, after 4.5 s" from decision.input.user (sandbox/ask_broker.cc:
// answer, scope, latency_ms; remembered when an earlier "for the session" answered it).
std::string user_answer_text(const json& user) {
  std::string s =
      std::string(str_field(user, "answer") == "allow" ? "allowed" : "denied") + " by the user";
  if (user.value("remembered", false)) return s + " (remembered for this session)";
  const std::string scope = str_field(user, "scope");
  if (scope == "session") s += ", for this session";
  else if (!scope.empty()) s += ", " + scope;
  if (int_field(user, "latency_ms", -1) >= 0)
    s += ", after " + seconds_text(int_field(user, "latency_ms"));
  return s;
}

// An argv word as a shell would need it to read back the same argv: `bash -c 'sh x.sh'` is
// three words, `bash -c sh x.sh` would be four.
std::string shell_word(const std::string& w) {
  static constexpr std::string_view kPlain =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@%+=:,./-";
  if (!w.empty() && w.find_first_not_of(kPlain) == std::string::npos) return w;
  std::string out = "'";
  for (char c : w) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace

std::string action_of(const json& r) {
  const json* argv = nullptr;
  if (r.contains("argv") && r["argv"].is_array()) argv = &r["argv"];
  else if (const json* in = object_member(r, "input");
           in && in->contains("argv") && (*in)["argv"].is_array())
    argv = &(*in)["argv"];
  std::string out = str_field(r, "tool");
  if (argv != nullptr) {
    out.clear();
    for (const auto& a : *argv) {
      // A word that is not UTF-8 is recorded as {"bytes": base64} and shown with \xNN.
      const std::string text = display_text(a);
      out += (out.empty() ? "" : " ") +
             (a.is_string() || !text.empty() ? shell_word(text) : dump_json(a));
    }
    return out;
  }
  const json* in = object_member(r, "input");
  const json& subject = in ? *in : r;
  for (const char* key : {"command", "path", "host"})
    if (subject.contains(key) && !display_text(subject[key]).empty())
      return out + " " + display_text(subject[key]);
  return out;
}

std::string rule_of(const json& r) {
  if (const json* rule = object_member(r, "deciding_rule")) return str_field(*rule, "id");
  if (const json* rule = object_member(r, "rule")) return str_field(*rule, "id");
  return str_field(r, "rule");
}

std::string exit_text(const json& r) {
  const json* nested = object_member(r, "exit");
  const json& ex = nested ? *nested : r;
  std::string out;
  for (const char* key : {"code", "exitCode", "exit_code"})
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

std::string duration_text(const json& r) {
  if (!r.contains("duration_ms") || !r["duration_ms"].is_number()) return "";
  return std::to_string(r["duration_ms"].get<int64_t>()) + " ms";
}

std::string decided_text(const json& d) {
  const std::string by = str_field(d, "decided_by");
  const json* input = object_member(d, "input");
  if (by == "user" && input != nullptr && object_member(*input, "user") != nullptr)
    return user_answer_text((*input)["user"]);
  if (by.empty()) return "";
  const std::string result = str_field(d, "result");
  if (result == "ask") return "asked for a person's approval (" + by + "), none was given";
  const std::string verb = result == "allow" ? "allowed" : result == "deny" ? "denied" : result;
  if (by == "user") return verb + " by the user";
  if (by == "constraint") return verb + " by a constraint";
  return verb + " by " + by;
}

std::string exec_text(const ExecNode& node) {
  const json& e = *node.exec;
  std::string s = action_of(e);
  if (!str_field(e, "interpreter").empty()) s += "  (#! " + str_field(e, "interpreter") + ")";
  const std::string result = str_field(e, "result");
  std::string who = str_field(e, "decided_by");
  if (!rule_of(e).empty()) who += (who.empty() ? "rule " : ", rule ") + rule_of(e);
  if (result == "deny") {
    s += "  REFUSED (" + who + ")";
    if (!str_field(e, "reason").empty()) s += ": " + str_field(e, "reason");
    return s;
  }
  if (!result.empty()) s += "  allowed (" + who + ")";
  const json& ended = node.end != nullptr ? *node.end : e;
  std::string how = exit_text(ended);
  if (!duration_text(ended).empty()) how += (how.empty() ? "" : ", ") + duration_text(ended);
  if (!str_field(e, "error").empty()) how += (how.empty() ? "" : ", ") + str_field(e, "error");
  return how.empty() ? s : s + "  " + how;
}

std::vector<std::string> files_touched(const json& r) {
  std::vector<std::string> out;
  if (r.contains("files_changed") && r["files_changed"].is_array())
    for (const auto& f : r["files_changed"]) out.push_back(file_change_text(f));
  if (r.value("files_changed_truncated", false)) out.push_back("... (the list was capped)");
  if (!str_field(r, "files_changed_error").empty())
    out.push_back("files changed not known: " + str_field(r, "files_changed_error"));
  // An edit or write call's record holds its tool's own list (filesMutated) beside the
  // workspace diff (files_changed), which already has the file: listing both showed each write
  // twice (issue 27 item 21). The tool's list stands alone only in a record without the diff.
  const bool diffed = r.contains("files_changed") && r["files_changed"].is_array();
  for (const char* key : {"filesMutated", "files_mutated"}) {
    if (diffed || !r.contains(key) || !r[key].is_array()) continue;
    for (const auto& f : r[key]) {
      if (f.is_string() || f.contains("bytes")) out.push_back(display_text(f));
      else if (!str_field(f, "path").empty())
        out.push_back(str_field(f, "path") +
                      (str_field(f, "op").empty() ? "" : " (" + str_field(f, "op") + ")"));
    }
  }
  return out;
}

std::vector<std::string> exec_tree_lines(const CallView& call, const std::string& indent) {
  struct Item {
    size_t node;
    std::string prefix;  // the rails drawn for this node's ancestors
    bool last;
    bool root;
  };
  std::vector<std::string> out;
  std::vector<Item> stack;
  for (size_t i = call.roots.size(); i-- > 0;) stack.push_back({call.roots[i], "", true, true});
  while (!stack.empty()) {
    Item it = std::move(stack.back());
    stack.pop_back();
    const ExecNode& n = call.execs[it.node];
    out.push_back(indent + it.prefix + (it.root ? "" : it.last ? "`- " : "|- ") + exec_text(n));
    std::string child_prefix = it.prefix;
    if (!it.root && child_prefix.size() < 3 * kMaxTreeIndent)
      child_prefix += it.last ? "   " : "|  ";
    for (size_t c = n.children.size(); c-- > 0;)
      stack.push_back({n.children[c], child_prefix, c + 1 == n.children.size(), false});
  }
  return out;
}

}  // namespace moat::sessions
