// sandbox/session_state.h: what a connection's hello establishes and its calls use: the
// workspace, the policy, the audit log and the sandbox session, with the one rule for
// writing the session's records.
#pragma once

#include <nlohmann/json.hpp>

#include <cerrno>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "base/log.h"
#include "base/result.h"
#include "base/unique_fd.h"
#include "policy/policy.h"
#include "sandbox/call_ends.h"
#include "sandbox/nested_git.h"
#include "sandbox/net_proxy.h"
#include "sandbox/program_registry.h"
#include "sandbox/session.h"
#include "sandbox/workspace_index.h"
#include "sessions/audit.h"
#include "tools/runner.h"
#include "tools/tool.h"

namespace moat::sandbox {

class McpHost;

struct SessionState {
  std::string id;         // 32 hex digits: the audit log's name and the console's key
  bool headless = true;   // no person to ask: ask verdicts are denies
  std::string workspace;  // canonical host path (the same path inside the sandbox)
  UniqueFd workspace_fd;  // the directory `workspace` named when it was checked
  std::unique_ptr<policy::Policy> policy;
  // moatd --typed-exec: an exec frame carries what the person typed (SupervisorOptions).
  bool typed_exec = false;
  // The person's policy layer, as this session loaded it: where a refusal says a user-layer
  // rule would go (sandbox/refusal_hint.h).
  std::string user_policy_dir;
  // resources.wall_time and the layer that set it ({key, value, layer, file}), for welcome:
  // `moat sandbox exec` names it when it caps --timeout or kills a call (issue 27 item 7).
  nlohmann::json wall_time = nlohmann::json::object();
  std::unique_ptr<sessions::AuditLog> audit;  // null when it could not be opened
  std::string audit_signing;  // "ed25519", or "off: <why>" (session.start says which)
  std::unique_ptr<Session> session;
  std::unique_ptr<tools::SandboxRunner> runner;  // the session's, as the tools see it
  std::set<std::string> granted;  // the tools announced in welcome: no other may be called
  std::vector<tools::ToolSpec> tool_specs;  // their specs, for welcome
  tools::ToolLimits tool_limits;  // the policy's, as the specs state them and the calls get them
  // What each call's files_changed is diffed against (files_changed.h); null when the workspace
  // could not be indexed, and files_error says why.
  std::unique_ptr<WorkspaceIndex> files;
  std::string files_error;
  // The `.git` entries below the workspace when the session started: any other is removed when
  // a call ends and at session end, unless [workspace] nested_git allows it (nested_git.h).
  std::unique_ptr<NestedGitWatch> nested_git;
  // What each process runs, as the exec watches let it run: the proxy's `net` records name
  // the program that opened the connection. Shared with the proxy's threads.
  std::shared_ptr<ProgramRegistry> programs = std::make_shared<ProgramRegistry>();
  // The calls running, which another of moatd's threads may end with a reason (the proxy's
  // rate bound). Shared with the proxy's threads.
  std::shared_ptr<CallEnds> call_ends = std::make_shared<CallEnds>();
  // The session's network proxy (null when the policy allows no connection). It writes `net`
  // records through record(): stopped before session.end is written.
  std::unique_ptr<NetProxy> net_proxy;
  // The session's MCP servers (sandbox/mcp_host.h): null when the policy declares none. Stopped
  // before the session (Connection::finish). Shared: its type is complete only where it is used.
  std::shared_ptr<McpHost> mcp;
  // hello.env: the person's variables the client sent for its MCP servers. Only McpHost reads
  // it, passing each server what a system or user layer's declaration of it names.
  std::map<std::string, std::string> mcp_env;

  // Appends a record that is not a decision (session.*, exec). A failed append is logged,
  // and fails the caller only when the policy requires an audit log or a quota refused it
  // (EDQUOT: moatd.toml's audit_bytes_per_day); with no log open at
  // all it always fails.
  Result<void> record(const std::string& type, nlohmann::json fields,
                      sessions::AuditLog::Sync sync = sessions::AuditLog::Sync::kNow) {
    if (!audit) return fail(std::string("audit log is not open"));
    auto r = audit->append(type, std::move(fields), sync);
    if (!r) {
      MOAT_LOG_ERROR("audit append %s: %s", type.c_str(), r.error().message().c_str());
      // A quota's refusal (moatd.toml's audit_bytes_per_day, EDQUOT) stands whatever the
      // policy says: the operator's bound is not the repository's or the person's to waive.
      if (r.error().code == EDQUOT || (policy && policy->audit_required())) return r;
    }
    return {};
  }
};

}  // namespace moat::sandbox
