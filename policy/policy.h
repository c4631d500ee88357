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

namespace moat::policy {

enum class Verdict { kAllow = 0, kAsk = 1, kDeny = 2 };  // ordered: higher is stricter
const char* verdict_name(Verdict v);                     // "allow" | "ask" | "deny"

// Where a rule came from: every decision names its deciding rule like this.
struct RuleRef {
  std::string id;     // "org.no-force-push", or "defaults.command" when no rule matched
  std::string layer;  // "system" | "user" | "project" | "cli" | "builtin"
  std::string file;   // file the rule was read from ("" for builtin/cli)
  int line = 0;
};

struct Decision {
  Verdict verdict = Verdict::kDeny;
  RuleRef deciding;
  std::vector<RuleRef> matched;      // every rule that matched, deciding one included
  // "policy" | "default" | "constraint" | "observed" (exec time: ran with no rule gating it)
  // | "user" (decide_typed: the person typed it) | "permissive"
  std::string decided_by;
  std::string reason;                // the rule's reason, for the model and the person
  bool headless_downgraded = false;  // the policy said ask; headless made it deny
  // Exec time only: the id of the ask rule a program met while headless, when
  // [exec] headless_ask = "allow" let it run (verdict allow, decided_by "observed"); the
  // audit record, the call's result and the batch report show it. Empty otherwise.
  std::string flagged;

  // Per-unit breakdown of a shell line ({units, problems}; null for other decisions), for
  // the audit record and policy explain. Built on request: most decisions are never
  // explained, and building it for each was over a third of decide_command's time.
  nlohmann::json detail() const { return detail_fn ? detail_fn() : nlohmann::json(); }
  std::function<nlohmann::json()> detail_fn;  // set by the policy; owns what it needs
};

enum class Access { kRead, kWrite, kExec };

// The sandbox's ceilings on a session, combined across the layers: each is the minimum over
// the layers that set it, else its default (kDefaultResources in policy/schema.h).
struct ResourceCeilings {
  std::int64_t wall_time_s = 0;   // resources.wall_time: per call, wall clock
  std::int64_t cpu_time_s = 0;    // resources.cpu_time: per call, CPU
  std::int64_t memory_bytes = 0;  // resources.memory
  std::int64_t pids = 0;          // resources.pids
  std::int64_t output_bytes = 0;  // resources.output: kept per call before it is cut
  std::int64_t file_size = 0;     // resources.file_size: the largest file a call may write
  std::int64_t open_files = 0;    // resources.open_files
  std::int64_t network_connections = 0;  // resources.network_connections: open at once
  std::int64_t network_bytes = 0;        // resources.network_bytes: per session, both ways
  std::int64_t network_idle_s = 0;       // resources.network_idle: per connection
  std::int64_t network_rate = 0;         // resources.network_rate: new connections a second

  // {"wall_time_s":..,"cpu_time_s":..,...}, as `moat policy list --json` prints them.
  nlohmann::json to_json() const {
    return {{"wall_time_s", wall_time_s},     {"cpu_time_s", cpu_time_s},
            {"memory_bytes", memory_bytes},   {"pids", pids},
            {"output_bytes", output_bytes},   {"file_size", file_size},
            {"open_files", open_files},       {"network_connections", network_connections},
            {"network_bytes", network_bytes}, {"network_idle_s", network_idle_s},
            {"network_rate", network_rate}};
  }
};

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

// Where to find the layers; every directory can be overridden so tests never touch /etc.
struct LoadOptions {
  std::string system_dir = "/etc/moat/policy.d";  // root-owned; a parse error is fatal
  std::string user_dir;                           // default $XDG_CONFIG_HOME/moat/policy.d
  std::string workspace;       // project layer: <workspace>/.moat/policy.toml, if trusted
  std::string trust_dir;       // where trust pins live; default $XDG_STATE_HOME/moat/trust
  bool trust_project = false;  // the person accepted the project layer's current hash
  bool headless = true;        // ask => deny
  std::vector<std::string> extra_files;  // --policy FILE: a narrowing CLI layer
  bool use_builtin_default = true;       // the shipped default policy as the base layer
                                         // (only when the system layer has no files)
  std::string home;                      // expands ~ and $HOME; default $HOME
  // Where bare program names are looked up; default: the host PATH restricted to the
  // read-only system trees the sandbox binds (/usr, /bin, /sbin, /lib, /etc).
  std::vector<std::string> search_path;
  // Files here can be planted by sandboxed code, so no allow rule matches a program in
  // them; default writable_roots(workspace) (policy/writable_roots.h).
  std::vector<std::string> writable_roots;
  // Added to writable_roots (or its default): moat sandbox exec's --bind targets.
  std::vector<std::string> extra_writable_roots;
  std::map<std::string, std::string> path_vars;  // $NAME in path patterns (AUDIT_DIR, ...)
};

class Policy {
 public:
  virtual ~Policy() = default;
  static Result<std::unique_ptr<Policy>> load(const LoadOptions& options);

  virtual Decision decide_tool(const std::string& tool) const = 0;
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
