// sandbox/audit_records.cc: each audit record's one encoder (see audit_records.h).
#include "sandbox/audit_records.h"

#include "base/check.h"
#include "sessions/digest.h"

namespace moat::sandbox::audit {
namespace {

template <typename T>
void put(json& j, const char* key, const std::optional<T>& v) {
  if (v) j[key] = *v;
}

json or_null(const std::optional<std::string>& v) { return v ? json(*v) : json(nullptr); }
json or_null(const std::optional<int>& v) { return v ? json(*v) : json(nullptr); }
json or_null(const std::optional<json>& v) { return v ? *v : json(nullptr); }

std::string name(policy::DecidedBy d) { return std::string(policy::decided_by_name(d)); }

// The first bytes of valid UTF-8 text, at most `max`, cut before a sequence it would split.
std::string utf8_head(const std::string& s, std::size_t max) {
  if (s.size() <= max) return s;
  std::size_t n = max;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return s.substr(0, n);
}

}  // namespace

json SessionStart::to_json() const {
  json j = {{"moat_version", moat_version},   {"peer", peer},
            {"host", host},                   {"workspace", workspace},
            {"interactive", interactive},     {"console", console},
            {"layers", layers},               {"policy_hash", policy_hash},
            {"sandbox", sandbox},             {"tools", tools},
            {"audit_signing", audit_signing}, {"exec_typed_by", exec_typed_by},
            {"file_index", file_index}};
  put(j, "binds", binds);
  put(j, "project_policy", project_policy);
  return j;
}

json SessionRefused::to_json() const { return {{"reason", reason}, {"peer", peer}}; }

json SessionEnd::to_json() const {
  json j = {{"calls", calls}, {"duration_s", duration_s}};
  put(j, "nested_git_removed", nested_git_removed);
  put(j, "nested_git_reason", nested_git_reason);
  return j;
}

json Decision::to_json() const {
  const bool by_person = decided_by == policy::DecidedBy::kUser;
  json j = {{"decision_id", decision_id},
            {"tool", tool},
            {"call_id", call_id},
            {"input", input},
            {"result", policy::verdict_name(result)},
            {"deciding_rule", deciding_rule},
            {"matched", matched},
            {"decided_by", name(decided_by)},
            // Which channel decided: a person's answer only ever comes from the console.
            {"channel", by_person ? "console" : "policy"},
            {"interactive", interactive},
            {"mode", interactive ? "ask" : "auto"},
            {"policy_hash", policy_hash}};
  put(j, "units", units);
  return j;
}

void Call::set_files_changed(const json& fields) {
  files_changed = fields.value("files_changed", json(nullptr));
  if (fields.contains("files_changed_error"))
    files_changed_error = fields["files_changed_error"].get<std::string>();
  if (fields.contains("files_changed_truncated"))
    files_changed_truncated = fields["files_changed_truncated"].get<bool>();
}

json Call::to_json() const {
  json j = {{"decision_id", decision_id},     {"call_id", call_id},
            {"tool", tool},                   {"cwd", cwd},
            {"is_error", is_error},           {"execs", execs},
            {"refused_execs", refused_execs}, {"flagged_execs", flagged_execs},
            {"files_changed", files_changed}};
  put(j, "command", command);
  put(j, "duration_ms", duration_ms);
  put(j, "flagged", flagged);
  put(j, "exit_code", exit_code);
  put(j, "signal", signal);
  put(j, "output", output);
  put(j, "output_bytes", output_bytes);
  put(j, "processes", processes);
  put(j, "filesMutated", files_mutated);
  put(j, "path", path);
  put(j, "fullOutputPath", full_output_path);
  put(j, "timedOut", timed_out);
  put(j, "nested_git_removed", nested_git_removed);
  put(j, "nested_git_reason", nested_git_reason);
  put(j, "cancelled", cancelled);
  put(j, "files_changed_error", files_changed_error);
  put(j, "files_changed_truncated", files_changed_truncated);
  return j;
}

json Exec::to_json() const {
  json j = {{"call_id", call_id},
            {"decision_id", decision_id},
            {"exec_id", exec_id},
            {"parent_exec", or_null(parent_exec)},
            {"pid", pid},
            {"argv", argv},
            {"path", path},
            {"exe", exe},
            {"cwd", cwd},
            {"memory", std::string(exec_memory_name(memory))},
            {"result", policy::verdict_name(result)},
            {"decided_by", name(decided_by)},
            {"rule", or_null(rule)}};
  put(j, "flagged", flagged);
  put(j, "interpreter", interpreter);
  put(j, "runs", runs);
  put(j, "loads", loads);
  if (unnamed) j["unnamed"] = true;  // no name on disk: `exe` is not a file anyone can open
  put(j, "sha256", sha256);
  put(j, "reason", reason);
  put(j, "user", user);
  return j;
}

json ExecEnd::to_json() const {
  json j = {{"call_id", call_id},
            {"exec_id", exec_id},
            {"exit", {{"code", or_null(code)}, {"signal", or_null(signal)}}},
            {"duration_ms", duration_ms}};
  put(j, "note", note);
  return j;
}

json McpServer::to_json() const {
  json j = {{"server", server}, {"event", event}, {"decision_id", decision_id},
            {"call_id", call_id}, {"argv", argv}, {"layer", layer},
            {"source", source}, {"log", log}, {"start", start}};
  put(j, "env", env);
  put(j, "limits", limits);
  put(j, "tools", tools);
  put(j, "exit", exit);
  put(j, "error", error);
  return j;
}

void McpCall::set_args(const json& arguments) {
  const std::string text = arguments.dump(-1, ' ', false, json::error_handler_t::replace);
  args_bytes = text.size();
  args = utf8_head(text, kMaxArgsBytes);
  if (args.size() < text.size()) args_sha256 = "sha256:" + sessions::sha256_hex(text);
}

json McpCall::to_json() const {
  json j = {{"decision_id", decision_id}, {"call_id", call_id},
            {"tool", tool}, {"server", server},
            {"server_tool", server_tool}, {"args", args},
            {"args_bytes", args_bytes}, {"result_bytes", result_bytes},
            {"result_kind", result_kind}, {"duration_ms", duration_ms},
            {"is_error", is_error}};
  put(j, "args_sha256", args_sha256);
  put(j, "error", error);
  put(j, "cancelled", cancelled);
  return j;
}

}  // namespace moat::sandbox::audit
