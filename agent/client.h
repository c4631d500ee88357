// agent/client.h: the agent's side of the moatd protocol: spawn or connect, hello/welcome,
// concurrent calls with streamed progress, cancel, bye. Trusts nothing moatd sends either.
#pragma once

#include <sys/types.h>

#include <nlohmann/json.hpp>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"
#include "sandbox/protocol.h"
#include "tools/tool.h"

namespace moat::agent {

// Why a hello failed, so the CLI can pick its exit code (sandbox → 3, else 2).
struct WelcomeError {
  std::string code;  // "sandbox" | "policy" | "workspace" | "protocol" | "audit" | "io"
  std::string message;
};

// What moatd announced for the session: its id, the granted tools, the audit path and an
// interactive session's console token (sandbox/protocol.h).
using Welcome = sandbox::WelcomeMsg;

class MoatdClient {
 public:
  // Starts a private moatd on a socketpair (its environment scrubbed: no API keys), in a
  // session and process group of its own (a signal to ours must not kill it before it has
  // written session.end), and returns a client connected to it. moatd_args are passed
  // through (e.g. --audit-dir). With `console`, a second socketpair is the session's console
  // channel: take_console() hands its end to the console process.
  static Result<std::unique_ptr<MoatdClient>> spawn_private(
      const std::vector<std::string>& moatd_args, bool console = false);
  // Connects to a running moatd's socket.
  static Result<std::unique_ptr<MoatdClient>> connect(const std::string& socket_path);
  // Starts moatd with `moatd_args` detached from this process (a new session, reparented to
  // init, stdin /dev/null, stdout and stderr appended to `log_path`, the same scrubbed
  // environment as a private one's); returns once the intermediate child has exited. A
  // resident moatd (agent/resident.h) is started so.
  static Result<void> start_detached(const std::vector<std::string>& moatd_args,
                                     const std::string& log_path);
  ~MoatdClient();

  // Sends hello and waits for welcome. On failure *why says which layer refused. Before the
  // reader thread runs, the welcome is read on the calling thread, so a process that drops
  // privileges after hello (moat run) is still single-threaded when it does: capabilities,
  // no_new_privs and seccomp filters are per thread.
  // network and binds: what moat sandbox exec asks of the session (sandbox::HelloMsg).
  Result<Welcome> hello(const std::string& workspace, bool headless, WelcomeError* why,
                        sandbox::NetworkRequest network = sandbox::NetworkRequest::kAsPolicyGrants,
                        std::vector<sandbox::BindMount> binds = {});
  // hello() in two halves, so the caller can do its own start-up while moatd builds the
  // session (moat run loads its HTTP transport meanwhile): send_hello, then await_welcome.
  Result<void> send_hello(
      const std::string& workspace, bool headless, WelcomeError* why,
      sandbox::NetworkRequest network = sandbox::NetworkRequest::kAsPolicyGrants,
      std::vector<sandbox::BindMount> binds = {});
  Result<Welcome> await_welcome(WelcomeError* why);
  // Starts the thread that reads moatd's frames (results, progress, asks). call() starts it
  // when it has not been started; idempotent.
  void start_reader();

  // Each call's decision as moatd reports it before the call runs (from the reader thread);
  // set before the first call.
  void set_on_decided(std::function<void(const std::string& id, const nlohmann::json&)> f) {
    on_decided_ = std::move(f);
  }

  // Each MCP server's state change moatd reports after the welcome (sandbox::McpStatusMsg),
  // from the reader thread; set before start_reader.
  void set_on_mcp_status(std::function<void(const sandbox::McpServerStatus&)> f) {
    on_mcp_status_ = std::move(f);
  }

  // Runs one call and waits for its result; progress chunks go to on_progress (may be
  // called from the reader thread). A stop sends the call's cancel at once (a stop_callback
  // wakes the wait). Thread-safe: calls may run concurrently.
  tools::ToolResult call(const std::string& id, const std::string& tool,
                         const nlohmann::json& arguments,
                         const std::function<void(std::string_view)>& on_progress,
                         std::stop_token stop);

  // Runs an exec frame (moat sandbox exec): `stdio` become the command's fds 0, 1 and 2,
  // sent with the frame (SCM_RIGHTS). Waits for its result (sandbox/exec_call.h's details).
  tools::ToolResult exec(const sandbox::ExecMsg& m, const int (&stdio)[3]);
  // exec() in two halves, so moat sandbox exec can send its exec frame right behind its hello
  // without waiting for the welcome (docs/protocol.md): send_exec, then (after await_welcome)
  // await_exec. A refused hello ends the connection, and moatd closes the fds it received.
  Result<void> send_exec(const sandbox::ExecMsg& m, const int (&stdio)[3]);
  tools::ToolResult await_exec(const std::string& id);

  // A shared moatd: opens the session's console connection with the welcome's one-time
  // token (before the loop exists, so the loop never could). take_console() hands it over.
  Result<void> attach_console(const std::string& session, const std::string& token);
  // The console channel (spawn_private with console, or attach_console), once.
  UniqueFd take_console() { return std::move(console_); }

  void bye();
  // The protocol version the hello says (sandbox/protocol.h: the lowest that has what this
  // connection will do): kPipelinedExecVersion before an exec pipelined behind the hello.
  void set_hello_version(std::int64_t version) { hello_version_ = version; }
  // The hello asks that exec frames be judged as typed (sandbox::HelloMsg::typed_exec):
  // moat sandbox exec's connection to a resident moatd, never moat run's.
  void ask_typed_exec() { ask_typed_exec_ = true; }
  // The hello carries these of the person's variables, for the MCP servers whose trusted
  // declarations name them (sandbox::HelloMsg::env).
  void set_hello_env(std::map<std::string, std::string> env) { hello_env_ = std::move(env); }
  pid_t moatd_pid() const { return child_pid_; }
  int fd() const { return fd_.get(); }

 private:
  MoatdClient(UniqueFd fd, pid_t child, std::string socket_path = "")
      : fd_(std::move(fd)),
        child_pid_(child),
        socket_path_(std::move(socket_path)),
        frames_(fd_.get()) {}
  template <typename Msg>
  Result<void> send(const Msg& m) {
    return send_json(m.to_json());
  }
  // With fds, they travel with the frame's first bytes (SCM_RIGHTS).
  Result<void> send_json(const nlohmann::json& frame, const int* fds = nullptr,
                         std::size_t nfds = 0);
  // Registers call `id`, sends its frame with `send_it`, waits for the result.
  tools::ToolResult await_result(const std::string& id,
                                 const std::function<Result<void>()>& send_it,
                                 const std::function<void(std::string_view)>& on_progress,
                                 const std::stop_token& stop);
  // await_result's halves: registers call `id` and sends its frame (an error says why it was
  // not sent, and nothing waits for it); then waits for its result, sending its cancel on a
  // stop.
  Result<void> start_call(const std::string& id,
                          const std::function<void(std::string_view)>& on_progress,
                          const std::function<Result<void>()>& send_it);
  tools::ToolResult await_call(const std::string& id, const std::stop_token& stop);
  // The one loop that reads moatd's frames (on the reader thread, or on hello()'s thread
  // before that exists), until the connection ends; with until_welcome, also until hello
  // has its answer (a welcome or a refusing error frame).
  void read_frames(bool until_welcome);
  // Handles one frame; false when the connection must stop (*why says why).
  bool dispatch(sandbox::ServerFrame frame, std::string* why);
  bool hello_answered();
  bool reader_started();
  void mark_closed(const std::string& why);

  struct Pending {
    bool done = false;
    tools::ToolResult result;
    std::function<void(std::string_view)> on_progress;
  };

  UniqueFd fd_;
  pid_t child_pid_ = -1;
  std::string socket_path_;  // a shared moatd's socket (the console connects to it too)
  UniqueFd console_;
  std::mutex send_mu_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, std::shared_ptr<Pending>> pending_;
  std::optional<sandbox::WelcomeMsg> welcome_;
  std::optional<sandbox::ErrorMsg> refusal_;  // the error frame that refused the hello
  std::string fatal_;                         // set when the connection broke: every waiter gets it
  bool closed_ = false;
  std::thread reader_;
  std::once_flag reader_once_;
  sandbox::FrameReader frames_;  // hello() and then the reader thread, never both at once
  std::function<void(const std::string& id, const nlohmann::json& decided)> on_decided_;
  std::function<void(const sandbox::McpServerStatus&)> on_mcp_status_;
  bool ask_typed_exec_ = false;
  std::int64_t hello_version_ = sandbox::kMinProtocolVersion;
  std::map<std::string, std::string> hello_env_;
};

// Where moatd is: $MOATD_BIN, else next to this executable, else ../sandbox/moatd (build tree).
std::string find_moatd();

}  // namespace moat::agent
