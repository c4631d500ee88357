// policy/schema.h: one struct per TOML table of a policy file; the single source for the
// loader's accepted keys and for docs/policy.md (a test checks both against this file).
//
// Format, relied on by tests/unit/policy/schema_docs_test.cc: a struct is introduced by a
// comment line "// [table]" or "// [[table]]" (or "// <table>.<key> = { ... }" for inline
// tables); each TOML key is a member named exactly like the key, followed by
// "// default: <value>. <doc>" or "// required. <doc>". Members whose comment starts with
// "(not a TOML key)" are bookkeeping. One line per member, whatever its length: the file is
// kept out of clang-format (below), which would wrap the comments this format relies on.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "policy/resources.h"
#include "policy/verdict.h"

// clang-format off
namespace moat::policy {

// Where something was read from; every rule keeps one so decisions can name file:line.
struct SourcePos {
  std::string file;
  int line = 0;
  int column = 0;
};

// A single-word glob list, written in TOML as a string or an array of strings.
using Strings = std::vector<std::string>;

// One element of `args`: a single token pattern, or a list of alternatives.
struct ArgPattern {
  Strings alternatives;  // (not a TOML key) "*" = one word, "**" = the rest, else a glob
};

// defaults = { ... }
struct Defaults {
  std::optional<Verdict> tool;               // default: "ask". Tool calls no [[tool]] rule matches
  std::optional<Verdict> command;            // default: "ask". Simple commands no [[command]] rule matches
  std::optional<Verdict> read;               // default: "allow". Path reads no [[path]] rule matches
  std::optional<Verdict> write;              // default: "ask". Path writes (and redirections) no [[path]] rule matches
  std::optional<Verdict> exec;               // default: "allow". Executed files no [[path]] rule with access "exec" matches
  std::optional<Verdict> network;            // default: "deny". Connections no [[network]] rule matches
  std::optional<Verdict> unparseable_shell;  // default: "ask". Shell lines that cannot be judged statically
};

// resources = { ... }
struct Resources {
  std::optional<std::int64_t> wall_time;   // default: "10m". Wall-clock limit per call (duration: 90, "30s", "10m", "1h")
  std::optional<std::int64_t> cpu_time;    // default: "10m". CPU time limit per call (duration)
  std::optional<std::int64_t> memory;      // default: "4GiB". Memory ceiling (size: bytes, "512MiB", "4GiB")
  std::optional<std::int64_t> pids;        // default: 512. Maximum number of processes
  std::optional<std::int64_t> output;      // default: "16MiB". Output kept per call before it is truncated (size)
  std::optional<std::int64_t> file_size;   // default: "512MiB". Largest file a call may write or allocate (size)
  std::optional<std::int64_t> open_files;  // default: 1024. Maximum open file descriptors
  std::optional<std::int64_t> network_connections;  // default: 64. Connections the network proxy holds open at once for a session
  std::optional<std::int64_t> network_bytes;  // default: "4GiB". Bytes a session may move through the network proxy, both ways together (size)
  std::optional<std::int64_t> network_idle;  // default: "2m". A proxied connection with no byte either way for this long is closed (duration)
  std::optional<std::int64_t> network_rate;  // default: 200. New connections a second the network proxy admits for a session, after a burst of ten seconds' worth; a connection past it is refused and the call that opened it is ended
};

// [exec]
struct ExecSettings {
  std::optional<Verdict> workspace_programs;  // default: "allow". A program whose file lies in a writable root (a project's own build, ./configure's conftest, a venv's python): "allow", "ask" or "deny", on the model's line and when a call starts it; a name-based allow never matches such a file
  std::optional<Verdict> headless_ask;        // default: "allow". Exec time, headless: an ask rule met by a program an allowed call started: "allow" runs it and flags it in the audit, "deny" refuses it
};

// [workspace]
struct WorkspaceSettings {
  std::optional<Verdict> nested_git;  // default: "deny". A `.git` entry (directory, file or symlink) a call creates below the workspace root, other than the root's own: "deny" has moatd remove it when the call ends (a nested repository's config runs commands at the person's next git command there), "allow" keeps it
};

// Resources' defaults as values, their one home: the effective ceilings (policy.cc) and the
// sandbox's Limits (sandbox/session.h) start from these. schema_docs_test parses each
// "default:" above and checks that it names the value here, and docs/policy.md against it.
inline constexpr ResourceCeilings kDefaultResources = {
    .wall_time_s = 10 * 60,                  // "10m"
    .cpu_time_s = 10 * 60,                   // "10m"
    .memory_bytes = std::int64_t{4} << 30,   // "4GiB"
    .pids = 512,
    .output_bytes = std::int64_t{16} << 20,  // "16MiB"
    .file_size = std::int64_t{512} << 20,    // "512MiB"
    .open_files = 1024,
    .network_connections = 64,
    .network_bytes = std::int64_t{4} << 30,  // "4GiB"
    .network_idle_s = 2 * 60,                // "2m"
    .network_rate = 200,
};

// [layer]
struct LayerInfo {
  std::string name;      // default: the file name. Layer name copied into every audit record
  std::string revision;  // default: "". Revision copied into every audit record
};

// [constraints]
struct Constraints {
  Strings managed_allows_only;       // default: []. Categories ("command", "path", "network", "tool") whose allows only the system layer may grant
  Strings allowed_modes;             // default: []. Modes a session may run in; empty means any
  bool managed_mcp_servers_only = false;  // default: false. Only the system layer's [[mcp.server]] declarations run; every other layer's (and a repository's .mcp.json) are ignored
  bool audit_required = false;       // default: false. If the audit log cannot be written, nothing runs
  std::string unknown_keys = "error";  // default: "error". "error" or "warn": how lower layers' unknown keys are treated
};

// <rule>.tests = { ... }
struct RuleTests {
  Strings match;      // default: []. Inputs the rule must match (`moat policy test`)
  Strings not_match;  // default: []. Inputs the rule must not match
};

// [[command]].unless = { ... }
struct CommandUnless {
  Strings any_flag;  // default: []. The rule does not apply if any of these flags is present
  Strings any_arg;   // default: []. The rule does not apply if any operand (a word that is not an option) matches one of these globs
};

// [[command]]
struct CommandRule {
  std::string id;                   // required. Unique id named in every decision
  Verdict decision = Verdict::kAsk;  // required. "allow", "ask" or "deny"
  Strings program;                  // default: any program. Basename(s) or absolute path(s) of argv0
  Strings program_paths;            // default: []. Allow only: the resolved real path must be one of these
  std::string sha256;               // default: "". Allow only: the resolved file's SHA-256 must equal this
  std::vector<ArgPattern> args;     // default: []. Ordered operand patterns: "x", ["a","b"], "*" (one), "**" (rest)
  Strings any_flag;                 // default: []. Matches if any of these flags is present (order-free); with any_arg, either one is enough
  Strings all_flags;                // default: []. Matches only if all of these flags are present
  Strings no_flag;                  // default: []. Matches only if none of these flags is present
  Strings any_arg;                  // default: []. Matches if any word after the program (options included) matches one of these globs; with any_flag, either one is enough
  Strings any_env;                  // default: []. Matches if the command sets one of these variables (globs)
  Strings script_paths;             // default: []. The first operand, resolved against the cwd, must match one of these path globs
  CommandUnless unless;             // default: {}. Exceptions inside the rule
  std::string reason;               // default: "". Told to the model and the person
  RuleTests tests;                  // default: {}. Shell lines for `moat policy test`
  SourcePos pos;                    // (not a TOML key) where the rule starts
};

// [[path]].unless = { ... }
struct PathUnless {
  Strings paths;  // default: []. The rule does not apply to paths matching these globs
};

// [[path]]
struct PathRule {
  std::string id;                   // required. Unique id named in every decision
  Verdict decision = Verdict::kAsk;  // required. "allow", "ask" or "deny"
  Strings access;                   // required. Any of "read", "write", "exec"
  Strings paths;                    // required. gitignore-style globs: "/abs/**", "~/.ssh/**", "$WORKSPACE/**", "*.pem", ".git/config"
  PathUnless unless;                // default: {}. Exceptions inside the rule
  std::string reason;               // default: "". Told to the model and the person
  RuleTests tests;                  // default: {}. Paths for `moat policy test` (checked with the first access)
  SourcePos pos;                    // (not a TOML key) where the rule starts
};

// [[network]]
struct NetworkRule {
  std::string id;                   // required. Unique id named in every decision
  Verdict decision = Verdict::kAsk;  // required. "allow", "ask" or "deny"
  Strings domains;                  // required. Host names or IP addresses; "*.x" covers subdomains, not the apex; an IP address (or a name resolving to a private one) is reached only when named here
  std::vector<std::int64_t> ports;  // default: []. Ports; empty means any
  std::string reason;               // default: "". Told to the model and the person
  SourcePos pos;                    // (not a TOML key) where the rule starts
};

// [[tool]].unless = { ... }
struct ToolUnless {
  Strings tool;    // default: []. The rule does not apply to tools matching these globs
  Strings server;  // default: []. The rule does not apply to tools of these MCP servers ("mcp:<server>:<tool>")
};

// One condition of [[tool]].args: an argument of the call and the globs its value must match.
struct ToolArgCondition {
  std::string key;   // (not a TOML key) a top-level argument name ("path") or a JSON pointer ("/options/mode")
  Strings globs;     // (not a TOML key) "*" any scalar, "**" any value; else word globs on a string (a number or boolean as its JSON text)
};

// [[tool]]
struct ToolRule {
  std::string id;                   // required. Unique id named in every decision
  Verdict decision = Verdict::kAsk;  // required. "allow", "ask" or "deny"
  Strings tool;                     // required. Tool name globs: "bash", "mcp:*"
  std::vector<ToolArgCondition> args;  // default: {}. Argument conditions, all of which must hold: { path = ["/workspace/**"], "/opts/mode" = "r*" }
  ToolUnless unless;                // default: {}. Exceptions inside the rule
  std::string reason;               // default: "". Told to the model and the person
  RuleTests tests;                  // default: {}. Tool names for `moat policy test`, each optionally followed by a space and its arguments as a JSON object
  SourcePos pos;                    // (not a TOML key) where the rule starts
};

// [[mcp.server]]
struct McpServerDecl {
  std::string name;                 // required. [A-Za-z0-9_-]{1,32} without "__"; the model sees its tools as mcp__NAME__TOOL, rules name them mcp:NAME:TOOL
  Strings command;                  // default: []. argv of a stdio server (absolute path or a name on the sandbox's PATH); exactly one of command and url
  std::string url;                  // default: "". Streamable HTTP server (http:// or https://); exactly one of command and url
  Strings env;                      // default: []. Names of the person's variables passed to the server; system and user layers only
  Strings read;                     // default: []. Absolute host directories bound read-only into the session for this server
  std::string start = "on-use";     // default: "on-use". "session" (at session start) or "on-use" (at its first call)
  Resources resources;              // default: {}. The keys of [resources], narrowing the session's for this server
  SourcePos pos;                    // (not a TOML key) where the declaration starts
};

// [mcp]
struct McpTable {
  std::vector<McpServerDecl> server;  // default: []. MCP servers ([[mcp.server]])
};

// [top]
struct PolicyFile {
  std::int64_t schema = 1;          // required. Schema version; only 1 exists
  Defaults defaults;                // default: {}. Verdicts for unmatched actions; a user layer replaces the built-in default's, every other layer only tightens
  Resources resources;              // default: {}. Ceilings; the minimum over layers wins (a user ceiling replaces the built-in default's)
  LayerInfo layer;                  // default: {}. Name and revision of this layer
  ExecSettings exec;                // default: {}. What programs a call starts may do (see [exec])
  WorkspaceSettings workspace;      // default: {}. What a session may leave in the workspace (see [workspace])
  std::optional<Constraints> constraints;  // default: none. Organisation constraints, honoured only in the system layer
  std::vector<CommandRule> command;  // default: []. Command rules
  std::vector<PathRule> path;       // default: []. Path rules
  std::vector<NetworkRule> network;  // default: []. Network rules
  std::vector<ToolRule> tool;       // default: []. Tool rules
  McpTable mcp;                     // default: {}. MCP servers (see [[mcp.server]])
  SourcePos defaults_pos;           // (not a TOML key) where defaults is written
  SourcePos exec_pos;               // (not a TOML key) where [exec] is written
  SourcePos workspace_pos;          // (not a TOML key) where [workspace] is written
  std::string file;                 // (not a TOML key) the file it was read from
  std::string sha256;               // (not a TOML key) hex SHA-256 of the file's bytes
};

}  // namespace moat::policy
// clang-format on
