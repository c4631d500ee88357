// sandbox/session.h: one sandbox per agent session: namespaces set up once, a worker per call.
#pragma once

#include <sys/types.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "base/stop_flags.h"
#include "base/unique_fd.h"
#include "sandbox/init_contract.h"
#include "sandbox/session_config.h"
#include "sandbox/session_description.h"
#include "tools/runner.h"

namespace moat::sandbox {

class ExecObserver;

// Makes an action's audit record durable (AuditLog::make_durable); an error means the action
// must not have any effect.
using DurableFn = std::function<Result<void>()>;

struct ExecSpec {
  std::vector<std::string> argv;           // argv[0] resolved through PATH inside the sandbox
  std::string cwd;                         // sandbox path; empty = workspace
  double timeout_s = 0;                    // 0 = limits.wall_time_s; never more than it
  // A session's service (an MCP server, sandbox/mcp_host.h): neither timeout_s nor the
  // wall time caps it; it runs until it exits, `stop` is raised or the session ends.
  bool for_session = false;
  std::map<std::string, std::string> env;  // extra variables for this call only
  // Judges and records every program the call starts (sandbox/exec_watch.h); null: every
  // exec is let run unrecorded (a session used without a policy).
  ExecObserver* observer = nullptr;
  // Borrowed: the worker's fds 0, 1 and 2 (moat sandbox exec's own, checked by
  // sandbox/exec_stdio.h) in place of /dev/null and the output pipe; -1: not passed. Output
  // then goes straight to them, so on_output is never called and output_bytes stays 0.
  int stdio[3] = {-1, -1, -1};
  // With stdio: the first of them that is a terminal becomes the command's controlling tty.
  bool terminal = false;
  // Called before the command can have any effect; an error fails the call and nothing of
  // argv runs. Under the exec watch it runs while the worker is being set up: the worker's
  // own exec waits for moatd's answer, which the watch gives only once this has returned.
  // Without the exec watch it runs before the worker is asked for. Empty: nothing to wait for.
  DurableFn durable;
  // Its own ceilings below the session's (an MCP server's resources): rlimits the worker
  // sets before its exec, each the smaller of this and the session's (init_contract.h).
  CallLimits limits;
  // Called with the worker's host pid before its program runs, while it is alone (it has
  // forked nothing): an MCP server's child cgroup is joined here. Needs the exec watch, which
  // holds the worker's exec meanwhile (ExecWatch's before_program); without it the call
  // fails. An error fails the call and nothing of argv runs. Empty: nothing to do.
  std::function<Result<void>(pid_t)> before_program;
};

// Failure of setting up a worker names the step: "worker step seccomp: Invalid argument".
class Session {
 public:
  virtual ~Session() = default;

  // Creates the namespaces, the filesystem view and the init process (pid 1 of the
  // session). Fails closed: an error names the layer that could not be applied.
  static Result<std::unique_ptr<Session>> create(const SessionConfig& config);

  // Runs argv in a fresh worker (stdin /dev/null, stdout and stderr interleaved into
  // on_output as they arrive; or spec.stdio). Blocks until it ends, times out, or `stop` is raised.
  // Thread-safe: calls may run concurrently from different threads.
  virtual Result<tools::ExecStatus> exec(const ExecSpec& spec,
                                         const std::function<void(std::string_view)>& on_output,
                                         StopFlags stop) = 0;

  // Runs config.handler(request) in a fresh worker with every restriction applied (no
  // exec), and returns what it returned. Thread-safe.
  virtual Result<std::string> run_handler(std::string_view request) = 0;

  // Creates (truncating) a file at a sandbox path, opened inside the sandbox's view, and
  // returns it for writing from the host side (bash spills its full output there).
  virtual Result<UniqueFd> create_file(const std::string& sandbox_path) = 0;

  // What was applied and what was skipped (session_description.h), for the welcome and the
  // audit log's session.start.
  virtual const SessionDescription& describe() const = 0;

  virtual pid_t init_pid() const = 0;

  // Ends the session's processes: returns once its init, and with it every process of its pid
  // namespace, is gone and its placeholders are removed, so nothing of the session runs or
  // changes the workspace any more. What is left, the keeper's reaping (its namespaces' teardown)
  // and the cgroup's removal, is the destructor's: a bye is answered between the two
  // (supervisor.cc). Takes no call after it; a second call does nothing.
  virtual void end() {}

  // The listening socket of SessionConfig::net_proxy_port, once (then an invalid fd).
  virtual UniqueFd take_net_listener() { return UniqueFd(); }
};

}  // namespace moat::sandbox
