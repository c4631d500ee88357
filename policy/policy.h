// policy/policy.h: the effective policy moatd enforces: load the layers, then decide.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/result.h"
#include "policy/load_options.h"
#include "policy/mcp_servers.h"
#include "policy/resources.h"
#include "policy/verdict.h"

namespace moat::policy {

// One program a running command is about to start, as the exec watch saw it
// (sandbox/exec_watch.h): argv exactly as executed, the file by the path it was named by and
// the path it resolves to, both in the sandbox's view (the same paths as the host's for the
// workspace and the system trees).
struct ExecFacts {
  std::vector<std::string> argv;
  std::string path;       // absolute: the path execve was given, joined to the caller's cwd
  std::string real_path;  // the file it resolved to
  std::string cwd;
  // No name on disk (a memfd, an O_TMPFILE or deleted file): judged as a program in a writable
  // root ([exec] workspace_programs) whatever its path says.
  bool unnamed = false;
  // What makes the dynamic loader load code into it: each variable of the new environment that
  // code_env.h marks as read at exec (LD_PRELOAD, ...), and each loader option that stands for
  // one, judged as an assignment of the variable on the model's line is (builtin.code-env).
  struct Load {
    std::string name;   // the variable: "LD_PRELOAD"
    std::string value;
    std::string given;  // how, for the reason: "in its environment", "the dynamic loader's
                        // option --preload"
  };
  std::vector<Load> loads = {};
};

class Policy {
 public:
  virtual ~Policy() = default;
  static Result<std::unique_ptr<Policy>> load(const LoadOptions& options);

  // A tool call without arguments or hints: decide_tool(tool, {}, {}).
  Decision decide_tool(const std::string& tool) const { return decide_tool(tool, {}, {}); }
  // A tool call ("bash", "mcp:SERVER:TOOL") with its arguments (a JSON object) for the
  // [[tool]] rules' args conditions. `hints` (tool_hints of an MCP tool's annotations) only
  // choose the default when no rule matches: read_only takes defaults.read, destructive at
  // least "ask"; neither loosens a defaults.tool of "deny".
  virtual Decision decide_tool(const std::string& tool, const nlohmann::json& args,
                               const ToolHints& hints) const = 0;
  // A bash command line: parsed, every simple command judged; the strictest wins.
  virtual Decision decide_command(const std::string& line, const std::string& cwd) const = 0;
  // A program started under a running command, judged by the [[command]] rules (argv as
  // executed; the program by its path and real path, never by argv[0], which the caller
  // chooses) and the [[path]] exec rules. When no rule matches, the defaults do not apply
  // (they are for the model's own command line): it is allowed, decided_by "observed".
  virtual Decision decide_exec(const ExecFacts& facts) const = 0;
  // A command line the PERSON typed (`moat sandbox exec CMD`, a batch manifest's `check`):
  // the person's decision. Only the system and cli layers' denies and asks bind it (an ask
  // becomes deny headless, with the reason); everything else (the built-in default, user and
  // project rules, defaults.command, unparseable_shell, builtin.code-env) is allowed with
  // decided_by "user" and deciding rule {"person", "user", "", 0}. `matched` still lists
  // every rule that matched, for the audit. What the line starts is judged by decide_exec.
  virtual Decision decide_typed(const std::string& line, const std::string& cwd) const = 0;
  // A canonical path (the caller resolves it inside the sandbox) and an access.
  virtual Decision decide_path(const std::string& path, Access access) const = 0;

  // The sandbox's view and ceilings, combined across layers (minimum wins).
  virtual ResourceCeilings resources() const = 0;
  virtual std::vector<std::string> protected_globs() const = 0;   // write-masked in workspace
  virtual std::vector<std::string> unreadable_globs() const = 0;  // read-denied (masked)
  // The deny rules for `access` at or below `root` (canonical), as root-relative globs for the
  // sandbox to mask where root is bound (moat sandbox exec --ro-bind): what unreadable_globs
  // is for the workspace. Fails naming the rule when one of its globs may match below root but
  // cannot be written relative to it ("/data/*/key" below /data/in).
  virtual Result<std::vector<std::string>> denied_globs_under(const std::string& root,
                                                              Access access) const = 0;
  virtual bool audit_required() const = 0;
  // [{name, revision, file, sha256}] for session.start; and the hash over all layers.
  virtual nlohmann::json layers_json() const = 0;
  virtual std::string policy_hash() const = 0;

  // A connection to host:port (a name or an IP literal, as the program gave it). A host that
  // is not a name or an address is denied (builtin.network-host); an IP literal is judged
  // only by rules that name it (else builtin.network-ip-literal denies it), whatever
  // defaults.network says. The proxy judges each internal address a name resolves to the
  // same way (policy/network.h).
  virtual Decision decide_network(const std::string& host, int port) const = 0;
  // Whether any connection could be allowed: an effective [[network]] allow, or
  // defaults.network = "allow", or (when a person can be asked) an ask of either kind.
  // Without one the session gets no proxy at all.
  virtual bool grants_network() const = 0;
  // Whether an effective [[network]] allow (or an ask, when a person can be asked) names
  // `host` (normalised) in its domains, on any port: such a host is the proxy's to judge,
  // never left out of it (NO_PROXY).
  virtual bool may_allow_network_host(const std::string& host) const = 0;
  // The organisation's allowed_modes (empty: every mode).
  virtual bool mode_allowed(const std::string& mode) const = 0;
  virtual bool headless() const = 0;
  // [workspace] nested_git = "allow": a `.git` a call creates below the workspace root stays.
  // Otherwise moatd removes it when the call ends (sandbox/nested_git.h).
  virtual bool nested_git_allowed() const = 0;
  // The MCP servers a session may run (policy/mcp_servers.h effective_mcp_servers).
  virtual const std::vector<McpServerConfig>& mcp_servers() const = 0;
  // What the load skipped or ignored (untrusted project policy, lower-layer constraints).
  virtual const std::vector<std::string>& notices() const = 0;
  // The project layer for session.start: null when the workspace has no .moat/policy.toml,
  // else {file, sha256, pinned, state: trusted|untrusted|changed, loaded, skipped}.
  virtual nlohmann::json project_json() const = 0;
  // Every effective rule: [{id, kind, decision, layer, file, line, ignored, reason, tests}].
  virtual nlohmann::json rules_json() const = 0;
  // Expands ~, $WORKSPACE, $HOME and the other path variables the way path patterns do,
  // and makes a relative path absolute against the workspace (for tests and explain).
  virtual std::string expand_path(const std::string& path) const = 0;
};

}  // namespace moat::policy
