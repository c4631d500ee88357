// sandbox/audit_records.h: the records moatd writes to a session's audit log, one struct per
// record type, each with its fields (kFields: docs/sessions.md's "Record fields" table lists the
// same, a test holds them together) and one encoder. AuditLog::append(record, sync) writes one;
// the log adds v, seq, ts, type, session, id, prev and hash (sessions/audit.h).
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "policy/decided_by.h"
#include "policy/policy.h"
#include "sandbox/exec_memory.h"

namespace moat::sandbox::audit {

using nlohmann::json;

// session.start: what the session is, before anything of it runs.
struct SessionStart {
  static constexpr std::string_view kType = "session.start";
  static constexpr std::string_view kFields[] = {
      "moat_version", "peer",    "host",  "workspace",   "interactive", "console",
      "layers",       "policy_hash", "sandbox", "tools", "audit_signing", "exec_typed_by",
      "file_index",   "binds",   "project_policy"};
  std::string moat_version;
  json peer;  // {uid, gid, pid, user}
  json host;  // the host's name, or null
  std::string workspace;
  bool interactive = false;
  std::string console;  // "none" | "socketpair" | "token"
  json layers;
  std::string policy_hash;
  json sandbox;  // the session's own description (to_json(Session::describe()))
  std::vector<std::string> tools;
  std::string audit_signing;  // "ed25519" | "off: why"
  std::string exec_typed_by;  // "person" | "agent"
  json file_index;            // {files, ms} or {error}
  std::optional<json> binds;
  std::optional<json> project_policy;
  json to_json() const;
};

// session.refused: a session refused while it was set up (it has no session.start).
struct SessionRefused {
  static constexpr std::string_view kType = "session.refused";
  static constexpr std::string_view kFields[] = {"reason", "peer"};
  std::string reason;
  json peer;
  json to_json() const;
};

// session.end: after every process of the session is gone.
struct SessionEnd {
  static constexpr std::string_view kType = "session.end";
  static constexpr std::string_view kFields[] = {"calls", "duration_s", "nested_git_removed",
                                                 "nested_git_reason"};
  int calls = 0;
  double duration_s = 0;
  std::optional<json> nested_git_removed;
  std::optional<std::string> nested_git_reason;
  json to_json() const;
};

// decision: every evaluated action, written (and synced) before it has any effect.
struct Decision {
  static constexpr std::string_view kType = "decision";
  static constexpr std::string_view kFields[] = {
      "decision_id", "tool",       "call_id",     "input",   "result", "deciding_rule",
      "matched",     "decided_by", "channel",     "interactive", "mode", "policy_hash",
      "units"};
  std::string decision_id;
  std::string tool;
  std::string call_id;
  json input;  // {tool} and the command, cwd, path, access, user as the call had them
  policy::Verdict result = policy::Verdict::kDeny;
  json deciding_rule;
  std::vector<std::string> matched;
  policy::DecidedBy decided_by = policy::DecidedBy::kPolicy;
  bool interactive = false;  // also gives `mode` (ask | auto)
  std::string policy_hash;
  std::optional<json> units;
  json to_json() const;  // channel: "console" when a person decided, else "policy"
};

// call: one per tool call or exec frame, when it ends.
struct Call {
  static constexpr std::string_view kType = "call";
  static constexpr std::string_view kFields[] = {
      "decision_id",   "call_id",      "tool",      "cwd",          "command",
      "duration_ms",   "is_error",     "execs",     "refused_execs", "flagged_execs",
      "flagged",       "exit_code",    "signal",    "output",       "output_bytes",
      "processes",     "filesMutated", "path",      "fullOutputPath", "timedOut",
      "nested_git_removed", "nested_git_reason", "cancelled", "files_changed",
      "files_changed_error", "files_changed_truncated"};
  std::string decision_id;
  std::string call_id;
  std::string tool;
  std::string cwd;
  std::optional<std::string> command;
  std::optional<long long> duration_ms;
  bool is_error = false;
  int execs = 0;
  int refused_execs = 0;
  int flagged_execs = 0;
  std::optional<json> flagged;  // [{argv, rule}] of the first few
  // The call's own process's exit code and signal (each null when the other says it).
  std::optional<json> exit_code;
  std::optional<json> signal;
  std::optional<std::string> output;  // an exec frame's: its output passed through
  std::optional<json> output_bytes;   // null when moatd never saw the output
  std::optional<json> processes;
  // Copied from the tool's result details when it has them.
  std::optional<json> files_mutated, path, full_output_path, timed_out;
  std::optional<json> nested_git_removed;
  std::optional<std::string> nested_git_reason;
  std::optional<std::string> cancelled;  // "person"
  // files_changed (null when not known), with files_changed_error or files_changed_truncated.
  json files_changed;
  std::optional<std::string> files_changed_error;
  std::optional<bool> files_changed_truncated;
  // Takes files_changed, files_changed_error and files_changed_truncated from `fields` as
  // sandbox/files_changed.h gives them.
  void set_files_changed(const json& fields);
  json to_json() const;
};

// exec: one program a call starts, before it runs.
struct Exec {
  static constexpr std::string_view kType = "exec";
  static constexpr std::string_view kFields[] = {
      "call_id", "decision_id", "exec_id", "parent_exec", "pid",     "argv",    "path",
      "exe",     "cwd",         "memory",  "result",      "decided_by", "rule", "flagged",
      "interpreter", "runs",    "loads",   "unnamed",     "sha256",  "reason",  "user"};
  std::string call_id;
  std::string decision_id;
  std::string exec_id;
  std::optional<std::string> parent_exec;  // null for the call's own program
  long long pid = 0;
  json argv;  // argv_for_audit's words
  std::string path;
  std::string exe;
  std::string cwd;
  ExecMemory memory = ExecMemory::kExclusive;
  policy::Verdict result = policy::Verdict::kDeny;
  policy::DecidedBy decided_by = policy::DecidedBy::kPolicy;
  std::optional<json> rule;  // null when no rule gates it
  std::optional<std::string> flagged;
  std::optional<std::string> interpreter;
  std::optional<std::vector<std::string>> runs;
  std::optional<std::vector<std::string>> loads;
  bool unnamed = false;  // written only when true
  std::optional<std::string> sha256;
  std::optional<std::string> reason;
  std::optional<json> user;
  json to_json() const;
};

// exec.end: how one program ended.
struct ExecEnd {
  static constexpr std::string_view kType = "exec.end";
  static constexpr std::string_view kFields[] = {"call_id", "exec_id", "exit", "duration_ms",
                                                 "note"};
  std::string call_id;
  std::string exec_id;
  std::optional<int> code;    // exit.code, null when it did not exit
  std::optional<int> signal;  // exit.signal
  long long duration_ms = 0;
  std::optional<std::string> note;
  json to_json() const;
};

// net: one proxied connection (or a counted kind of them), as sandbox/net_records.h builds it:
// its fields are the proxy's (docs/sessions.md), passed through.
struct Net {
  static constexpr std::string_view kType = "net";
  static constexpr std::string_view kFields[] = {
      "host",        "port",     "method",   "address",    "decision", "rule",
      "layer",       "bytes_up", "bytes_down", "duration_ms", "error", "call_id",
      "exec_id",     "pid",      "program_error", "user",   "call_ended", "count",
      "first_ts",    "last_ts",  "errors",   "headless_downgraded", "mcp_server"};
  json fields;
  json to_json() const { return fields; }
};

// mcp.server: an MCP server's process (sandbox/mcp_host.h) started, or ended. `start` comes
// after the decision record (tool "mcp:SERVER", decided by its trusted declaration) that its
// exec records name.
struct McpServer {
  static constexpr std::string_view kType = "mcp.server";
  static constexpr std::string_view kFields[] = {
      "server", "event", "decision_id", "call_id", "argv", "layer", "source",
      "log",    "start", "env",         "limits",  "tools", "exit",  "error"};
  std::string server;
  std::string event;  // "start" | "exit" | "refused" (not started again: the restart bound)
  std::string decision_id;
  std::string call_id;  // the exec records' call_id for this process: "mcp:SERVER#N"
  std::vector<std::string> argv;
  std::string layer;   // the declaring policy layer
  std::string source;  // its file:line
  std::string log;     // the server's stderr, beside the audit log
  int start = 0;       // 1 for the first start, 2.. for the restarts
  // At start: the NAMES of the person's variables it was given (never their values).
  std::optional<std::vector<std::string>> env;
  // At start: the rlimits and child cgroup its `resources` gave it (sandbox/mcp_resources.h).
  std::optional<json> limits;
  std::optional<std::vector<std::string>> tools;  // at start, once listed: the model's names
  std::optional<json> exit;                        // {code, signal} at exit
  std::optional<std::string> error;
  json to_json() const;
};

// mcp.call: one call of an MCP server's tool, when it ends (its decision record came first).
struct McpCall {
  static constexpr std::string_view kType = "mcp.call";
  static constexpr std::string_view kFields[] = {
      "decision_id", "call_id", "tool", "server", "server_tool", "args", "args_bytes",
      "args_sha256", "result_bytes", "result_kind", "duration_ms", "is_error", "error",
      "cancelled"};
  std::string decision_id;
  std::string call_id;
  std::string tool;         // the model's name: mcp__SERVER__TOOL
  std::string server;
  std::string server_tool;  // the tool as the server names it
  // The arguments as JSON text, cut at kMaxArgsBytes (then args_sha256 names the whole).
  std::string args;
  std::size_t args_bytes = 0;
  std::optional<std::string> args_sha256;
  std::size_t result_bytes = 0;
  std::string result_kind;  // "text", "image", "structured", a mix ("text+image"), or "none"
  long long duration_ms = 0;
  bool is_error = false;
  std::optional<std::string> error;  // the host's or protocol's error (not the tool's isError)
  std::optional<std::string> cancelled;  // "person"
  static constexpr std::size_t kMaxArgsBytes = 4096;
  // Sets args, args_bytes and args_sha256 (when cut) from the call's arguments.
  void set_args(const json& arguments);
  json to_json() const;
};

}  // namespace moat::sandbox::audit
