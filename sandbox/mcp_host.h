// sandbox/mcp_host.h: a session's MCP servers (docs/mcp.md), run by moatd inside the session's
// sandbox: each one a long-lived exec (ExecSpec::for_session) under the session's namespaces,
// seccomp filter, Landlock, limits and exec watch, its stdin and stdout pipes held by moatd and
// spoken to by the protocol client (tools/mcp_client.h), its stderr appended to a log file
// beside the session's audit log. A server that ends is started again at its next call, at most
// kMaxRestarts times; everything is stopped when the session ends (or the host is dropped).
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <vector>

#include "base/result.h"
#include "policy/mcp_servers.h"
#include "policy/policy.h"
#include "sandbox/protocol.h"
#include "tools/mcp_client.h"
#include "tools/mcp_names.h"
#include "tools/tool.h"

namespace moat::sandbox {

class AskBroker;
struct SessionState;

struct McpHostOptions {
  // The first restart's wait; each further one doubles it (200, 400, 800 ms). Tests pass a
  // short one.
  std::chrono::milliseconds restart_backoff{200};
};

class McpHost {
 public:
  // A server that ended is started again at most this many times in a session, each after
  // McpHostOptions::restart_backoff << (restart - 1): a server that crashes at every start
  // costs a few seconds, not a loop.
  static constexpr int kMaxRestarts = 3;
  // What a server gets at stdin's close (the spec's stdio shutdown) before it is killed.
  static constexpr std::chrono::milliseconds kExitGrace{1000};
  // What a server's log keeps of its stderr in a session, over all its starts: the first
  // bytes; past them a line says how many were dropped (docs/mcp.md "Audit").
  static constexpr std::uint64_t kMaxLogBytes = 4u << 20;
  // A tool's inputSchema goes to the model with every request: one over kMaxToolSchemaBytes,
  // or one that would take a session's MCP schemas past kMaxSchemaBytes, is not offered (its
  // server's "tools" record says why).
  static constexpr std::size_t kMaxToolSchemaBytes = 64u << 10;
  static constexpr std::size_t kMaxSchemaBytes = 1u << 20;

  // Borrowed: the hello's session (policy, audit log, sandbox session) and its ask broker.
  McpHost(SessionState& session, AskBroker& asks, McpHostOptions options = {});
  ~McpHost();  // stop()
  McpHost(const McpHost&) = delete;
  McpHost& operator=(const McpHost&) = delete;

  // Starts each of the policy's stdio servers and lists its tools (an "on-use" server is then
  // stopped again, and started at its first call). A server that cannot start or list offers
  // no tool: its mcp.server record and its log say why; the session goes on.
  void start();

  // The tools the model is offered: each server's tools whose decision without arguments is
  // allow or ask, as mcp__SERVER__TOOL, its description marked as the server's text.
  const std::vector<tools::ToolSpec>& tool_specs() const { return specs_; }
  // The hints of a listed tool's annotations (policy::tool_hints); none for an unknown one.
  policy::ToolHints hints(const tools::mcp::ToolRef& ref) const;
  // The log file of a server's stderr; "" for an unknown server.
  std::string log_path(const std::string& server) const;
  // Each server's state now, for the welcome (protocol.h McpServerStatus).
  std::vector<McpServerStatus> status() const;
  // From now on each change of a server's state (started, ended, restarting, failed, said its
  // tools changed) is passed to `send`, only when it differs from the last state (McpStatusMsg).
  // Called once the welcome is out; stop() drops it first.
  void set_on_status(std::function<void(const McpServerStatus&)> send);

  // Calls the tool on its server (started again first if it ended and the bound allows).
  // An error names the server: it ended, it hung (the client's request timeout: the session's
  // wall time), it broke a bound, or it was stopped.
  Result<tools::mcp::CallOutcome> call(const tools::mcp::ToolRef& ref,
                                       const nlohmann::json& arguments, std::stop_token stop,
                                       std::function<void(const tools::mcp::Progress&)> progress);

  // Closes each server's stdin, waits kExitGrace for it to exit, kills what is left, and
  // joins every thread. Idempotent.
  void stop();

  struct Server;  // one server's process, client and tools (mcp_host.cc)

 private:
  Result<void> start_server(Server& s);
  // start_server for a call, its state reported before (restarting) and after (started, failed).
  Result<void> start_for_call(Server& s);
  // Applies `change` to a server's shown state; sends the result when it differs and a sender
  // is set.
  void report(Server& s, const std::function<void(McpServerStatus&)>& change);
  // Its state and error, its restarts used so far.
  void set_state(Server& s, const char* state, std::string error = "");
  McpServerStatus status_of(const Server& s) const;
  void stop_server(Server& s);
  void offer_tools(Server& s);
  // Waits the restart's backoff; false when the host's stop ended the wait.
  bool backoff(Server& s);

  SessionState& session_;
  AskBroker& asks_;
  const McpHostOptions options_;
  std::vector<std::unique_ptr<Server>> servers_;
  std::vector<tools::ToolSpec> specs_;
  std::size_t schema_bytes_ = 0;  // of the offered tools' inputSchemas
  mutable std::mutex status_mu_;  // each server's state fields and on_status_; in send order
  std::function<void(const McpServerStatus&)> on_status_;
};

// `binds` and, read-only at the same path, each `read` directory of the policy's MCP servers
// (only trusted layers' servers are in Policy::mcp_servers) that is not already in the view
// (a system tree, or one bound already). check_binds then checks them as the hello's.
std::vector<BindMount> with_mcp_reads(std::vector<BindMount> binds, const policy::Policy& policy);

// The hello's step: a host for the policy's servers, started, their tools added to the
// session's specs and granted tools; null when the policy declares no server.
std::shared_ptr<McpHost> start_mcp_servers(SessionState& session, AskBroker& asks,
                                           McpHostOptions options = {});

}  // namespace moat::sandbox
