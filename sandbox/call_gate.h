// sandbox/call_gate.h: the path of one tool call through moatd: decide (the policy), ask (the
// person, for an ask verdict), write the decision ahead (the audit log), and only then run
// it in the session's sandbox and record what ran. An action that cannot be audited does
// not happen.
#pragma once

#include <nlohmann/json.hpp>

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "base/stop_flags.h"
#include "sandbox/ask_broker.h"
#include "sandbox/protocol.h"
#include "sandbox/session_state.h"
#include "tools/mcp_names.h"
#include "tools/mutation_queue.h"
#include "tools/registry.h"
#include "tools/tool.h"

namespace moat::sandbox {

class ExecGate;

// One call as the connection hands it over (validated by protocol.h).
struct GateCall {
  std::string id;
  std::string tool;
  nlohmann::json args;
  // Raised by a cancel frame or the session's end (RunningCalls holds it too); held by the call,
  // so it lives as long as the call does, on whichever thread runs it. Null: never raised.
  std::shared_ptr<const CallCancel> cancel;
  // The call's place in the session's mutation queue, taken in arrival order (registry.h).
  std::shared_ptr<tools::MutationQueue::Ticket> ticket;
  std::function<void(std::string_view chunk)> progress;  // streamed output
  // The decision once it is made and allows the call, before it runs (may be empty).
  std::function<void(const nlohmann::json& decided)> decided = nullptr;
  // The person typed the command line (an exec frame of moatd --typed-exec): judged by
  // Policy::decide_typed, never set from anything a client sends.
  bool typed = false;
  // The directory the command line starts in, which its relative words name paths and programs
  // from (an exec frame's cwd); "" = the workspace root, where a tool call's bash starts.
  std::string cwd{};
};

class CallGate {
 public:
  // `session` is the hello's (its policy and runner set); everything is borrowed.
  CallGate(SessionState& session, AskBroker& asks, tools::MutationQueue& mutations)
      : session_(session), asks_(asks), mutations_(mutations) {}

  // Judges, audits and (when allowed) runs the call; returns the result the model reads. A
  // refusal is an error result naming why: an unknown tool, a NUL in an argument, the rule
  // that refused, or an audit log that could not be written.
  tools::ToolResult run(const GateCall& call);

  // An exec frame (moat sandbox exec): judged as the line of a bash call with the same words
  // and variables (by decide_typed when moatd was started --typed-exec: the person's own CLI
  // holds the connection), then run as argv, no shell, on the caller's fds (spec.stdio), every program
  // it starts through the exec watch; its "call" record names no output size (moatd never
  // sees the output). sandbox/exec_call.cc; details as exec_call.h says.
  tools::ToolResult run_exec(const ExecMsg& m, ExecSpec spec,
                             std::shared_ptr<const CallCancel> cancel);

  // A file tool's access to a canonical path, through the same decide, ask and audit;
  // nullopt when allowed, else the refusal the tool returns (tools::CallContext::authorize).
  std::optional<std::string> authorize_path(const GateCall& call, const std::string& path,
                                            tools::PathAccess access);

 private:
  // The id of the call's decision record once it is written and allows the call; else the
  // refusal, as an error whose message is the text the model reads.
  // `approved` gets the ids of the rules the call's command line met (ExecGate: a program
  // the line runs under an ask rule the person or the policy already allowed is not asked
  // again). `decided` gets the decision, its rule and who decided, for the result's details.
  // *by_policy: the refusal was the policy's (or the person's) verdict.
  // With `durable`, an allowing decision is written but not yet synced, and *durable makes
  // it durable: the caller must call it before the call has any effect (the runner does, and
  // a worker's program waits for it: ExecSpec::durable), so the sync overlaps the worker's
  // start. Without, the decision is on disk when admit returns.
  Result<std::string> admit(const GateCall& call, std::set<std::string>* approved,
                            nlohmann::json* decided, bool* by_policy = nullptr,
                            DurableFn* durable = nullptr);
  policy::Decision decide_tool(const GateCall& call) const;
  Result<std::string> refuse_unknown_tool(const GateCall& call);
  // A call of an MCP server's tool (mcp__SERVER__TOOL): admitted as any tool's, made by the
  // session's McpHost, recorded as "mcp.call" (sandbox/mcp_call.cc).
  tools::ToolResult run_mcp(const GateCall& call, const tools::mcp::ToolRef& ref);
  // Writes the decision record before anything runs (write-ahead); its id, or the error
  // that refuses the action.
  // With `pending`, the record is written unsynced and *pending is its seq (see admit).
  Result<std::string> audit_decision(const policy::Decision& d, const GateCall& call,
                                     nlohmann::json input, std::uint64_t* pending = nullptr);
  tools::CallContext context_for(const GateCall& call, tools::SandboxRunner& runner);
  // The "call" record: what the call ran and how it ended, after it ended. Returns what the
  // agent is told of it in the result's details: exit code, signal, files changed.
  nlohmann::json record_call(const GateCall& call, const std::string& decision_id,
                             const tools::ToolResult& result, long long duration_ms,
                             nlohmann::json processes, const ExecGate& execs);

  void record_exec(const GateCall& call, const std::string& decision_id, const std::string& cwd,
                   const tools::ExecStatus* status, const ExecGate& execs,
                   const nlohmann::json& nested_git_removed);

  SessionState& session_;
  AskBroker& asks_;
  tools::MutationQueue& mutations_;
};

}  // namespace moat::sandbox
