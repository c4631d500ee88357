// sandbox/supervisor.cc: moatd's serving loop: a connection's frames in order, the hello's
// checklist (hello_steps.h), and each call through the call gate (call_gate.h) on a thread.
#include "sandbox/supervisor.h"

#include <malloc.h>
#include <sys/socket.h>
#include <poll.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <memory>
#include <optional>
#include <system_error>
#include <type_traits>
#include <variant>

#include "base/log.h"
#include "base/thread_set.h"
#include "base/ticks.h"
#include "sandbox/ask_broker.h"
#include "sandbox/audit_records.h"
#include "sandbox/call_gate.h"
#include "sandbox/connection_limit.h"
#include "sandbox/exec_stdio.h"
#include "base/sys.h"
#include "sandbox/exec_call.h"
#include "sandbox/files_changed.h"
#include "sandbox/frame_writer.h"
#include "sandbox/mcp_host.h"
#include "sandbox/hello_steps.h"
#include "sandbox/idle_exit.h"
#include "sandbox/protocol.h"
#include "sandbox/read_deadline.h"
#include "sandbox/reply_frame.h"
#include "sandbox/resident_peer.h"
#include "sandbox/running_calls.h"
#include "tools/registry.h"

namespace moat::sandbox {
namespace {

using nlohmann::json;

// An exec frame's stdin, stdout and stderr, as they came (SCM_RIGHTS).
using ExecFds = std::array<UniqueFd, kExecFds>;

// A decoded frame's type, as its "type" field names it: what an error about the frame says.
const char* type_of(const ClientFrame& frame) {
  return std::visit([](const auto& m) { return std::decay_t<decltype(m)>::kType; }, frame);
}

// A connection moatd will not serve: its one error frame, sent without waiting, then closed.
void refuse_connection(UniqueFd conn, const std::string& why) {
  const std::string frame = encode_frame(ErrorMsg{why, "protocol", ""}.to_json());
  (void)::send(conn.get(), frame.data(), frame.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
}

// What a call or a connection is told when moatd has no thread to spare for it (pids.max of
// its cgroup, RLIMIT_NPROC, threads-max): that one fails, moatd and its other sessions go on.
std::string no_thread_for(const char* what, const std::system_error& e) {
  return std::string("moatd could not start a thread for this ") + what + " (" + e.what() +
         "); try again once others have ended";
}

// A call's run on its own thread. What it throws (no thread left for its exec watch, a bug)
// fails that call alone, as its error result: an exception escaping a thread is
// std::terminate, the end of every session of this moatd. What the call built is the call's
// own (its runner, watch, fds), freed as the exception unwinds.
template <typename Run>
tools::ToolResult run_call_guarded(const std::string& id, Run&& run, bool exec) {
  try {
    return run();
  } catch (const std::exception& e) {
    MOAT_LOG_ERROR("call %s ended by an exception: %s", moat::quoted(id).c_str(), e.what());
    const std::string why = std::string("moatd could not run this call: ") + e.what();
    return exec ? exec_not_run(why, "sandbox") : tools::ToolResult::error(why);
  }
}

// The hello's checklist, in order: each step runs only after the one before it succeeded,
// and the first that fails is answered by Connection::refuse.
constexpr std::pair<HelloStep, Result<void> (HelloSteps::*)()> kHelloChecklist[] = {
    {HelloStep::kVersion, &HelloSteps::check_version},        // a protocol version we speak
    {HelloStep::kWorkspace, &HelloSteps::resolve_workspace},  // the peer's own, held by fd
    {HelloStep::kPolicy, &HelloSteps::load_policy},           // with the workspace's layer
    {HelloStep::kMode, &HelloSteps::check_mode},              // the organisation may forbid it
    {HelloStep::kAuditLog, &HelloSteps::open_audit_log},      // before anything is decided
    {HelloStep::kOwnFiles, &HelloSteps::protect_own_files},   // moat's files out of reach
    {HelloStep::kBinds, &HelloSteps::check_binds},            // opened once, as the policy allows
    {HelloStep::kNetwork, &HelloSteps::check_network},        // what it asks, the policy grants
    {HelloStep::kSession, &HelloSteps::create_session},       // namespaces, mounts, init
    {HelloStep::kFileIndex, &HelloSteps::index_files},        // what calls' changes are diffed to
    {HelloStep::kSessionStart, &HelloSteps::record_session_start},  // what this session is
};

class Connection {
 public:
  // `console`: the person's channel attached at spawn; `consoles`: where a shared moatd's
  // sessions wait for a console to attach with their token (null for a private moatd).
  // `unauthenticated`: what all of a shared moatd's connections may hold before their hello;
  // `quotas`: the user's quotas its hello and audit log count against (both null for a private
  // moatd).
  Connection(const SupervisorOptions& options, const SupervisorDeps& deps, UniqueFd fd,
             PeerCred peer, UniqueFd console, ConsoleRegistry* consoles,
             UnauthenticatedBytes* unauthenticated, UserQuotas* quotas)
      : options_(options),
        deps_(deps),
        fd_(std::move(fd)),
        peer_(peer),
        writer_(fd_.get(), std::chrono::milliseconds(
                               static_cast<long long>(options.client_stall_timeout_s * 1000))),
        console_fd_(std::move(console)),
        consoles_(consoles),
        quotas_(quotas),
        before_hello_(unauthenticated, peer.uid) {}
  ~Connection() { finish(); }

  void run();
  // The most its frame buffer held: a connection that held a large frame gives the memory
  // back when it ends (malloc_trim).
  std::size_t peak_frame_buffer() const { return decoder_.peak_held_bytes(); }

 private:
  void send(const json& m);
  void send_error(const std::string& message, const std::string& code) {
    send(ErrorMsg{message, code, ""}.to_json());
  }
  // The frames the bytes read so far complete, in order; false when the connection ends.
  bool on_frames(FrameDecoder& decoder);
  // One decoded frame with the fds that came with it (only an exec frame takes them); false
  // when the connection ends with it.
  bool on_frame(const ClientFrame& frame, FrameDecoder& decoder, std::optional<ExecFds> fds);
  // The read's bytes into the decoder; false when the connection, not yet greeted, would hold
  // more than its share of the unauthenticated budget (its error frame is sent).
  bool feed(std::string_view bytes);
  Result<void> on_hello(const HelloMsg& hello);
  // The user's quotas allow a session (its place in sessions, audit bytes left today), checked
  // before anything of the session is built.
  Result<void> check_quotas();
  // The session's audit log counts its bytes against the user's of the day from now on.
  void count_audit_bytes();
  // The one place a failed hello step is answered: its error frame, and the session.refused
  // record for the steps that write one.
  Result<void> refuse(HelloStep step, const Error& error, HelloSteps& steps);
  void send_welcome();
  void on_call(const CallMsg& m, std::size_t frame_bytes);
  // A read's fds: an exec frame's stdin, stdout and stderr; false when they break a bound.
  bool take_fds(UniqueFd (&fds)[8], std::size_t nfds);
  // The waiting fds when the frame just decoded (`frame_bytes` with its length) is theirs.
  std::optional<ExecFds> claim_fds(std::size_t frame_bytes);
  void on_exec(const ExecMsg& m, std::size_t frame_bytes, std::optional<ExecFds> fds);
  // A call another thread ended (CallEnds: the proxy's rate bound) says so in its result.
  void say_if_ended(const std::string& id, tools::ToolResult& result);
  // A call whose thread could not start: its id (and exec slot) freed and its error result
  // sent; the connection goes on.
  void fail_unstarted(const std::string& id, std::size_t frame_bytes, bool exec,
                      const std::system_error& e);
  void finish();

  const SupervisorOptions& options_;
  const SupervisorDeps& deps_;
  UniqueFd fd_;
  PeerCred peer_;
  // Every frame to the client goes through it: a client that stops reading blocks no call's
  // deadline or cancel, and is disconnected after the stall timeout. Destroyed after
  // finish() (which runs in ~Connection) has queued the last results, before fd_ closes.
  FrameWriter writer_;
  bool greeted_ = false;
  SessionState session_;  // what the hello established
  std::unique_ptr<AskBroker> asks_;
  std::unique_ptr<CallGate> gate_;
  RunningCalls calls_;
  // edit/write wait for each other per canonical path within this session only: another
  // session's unanswered ask or slow writes never hold this one's.
  tools::MutationQueue mutations_;
  // One thread per running call, joined at the next call once finished (base/thread_set.h).
  ThreadSet threads_;
  UniqueFd console_fd_;
  ConsoleRegistry* consoles_;
  UserQuotas* quotas_;
  std::shared_ptr<void> session_place_;  // this session's place in quotas_, from its hello
  SessionConsole console_;  // the person's channel, when the session has one
  // The fds that came with a read, until the frame they belong to is decoded: the frame that
  // holds that read's last byte, fds_due_ bytes on from the first byte not yet decoded (a
  // unix stream read ends at the message that carried fds, unix(7), and moat sends them on
  // its exec frame's first bytes). At most one set waits, and at most one exec runs
  // (exec_running_), so a client makes moatd hold at most 2 * kExecFds of its fds. They may
  // come before the hello is answered (an exec pipelined behind it): a refused hello ends the
  // connection and closes them with it.
  std::optional<ExecFds> exec_fds_;
  std::size_t fds_due_ = 0;
  std::atomic<bool> exec_running_{false};
  // Until the hello is answered, a frame is at most a hello's size and the buffer counts
  // against the bytes all unauthenticated connections may hold (issue 26 item 11).
  FrameDecoder decoder_{kMaxHelloFrameBytes};
  UnauthenticatedBytes::Share before_hello_;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  bool finished_ = false;
  int call_count_ = 0;
};

void Connection::send(const json& m) {
  EncodedReply reply = encode_reply(m, peer_.pid);
  // The writer thread sends it (sandbox/frame_writer.h): no caller blocks on the client.
  writer_.push(std::move(reply.bytes));
  // The reader sees the end and finishes; the writer still sends the error frame first.
  if (reply.close_after) ::shutdown(fd_.get(), SHUT_RD);
}

bool Connection::feed(std::string_view bytes) {
  decoder_.feed(bytes);
  if (greeted_) return true;
  if (auto held = before_hello_.set(decoder_.held_bytes()); !held) {
    send_error(held.error().message(), "protocol");
    return false;
  }
  return true;
}

void Connection::run() {
  FrameDecoder& decoder = decoder_;
  ReadDeadline deadline;
  char buf[65536];
  for (;;) {
    if (auto ready = deadline.wait(fd_.get(), decoder, greeted_); !ready) {
      if (!ready.error().message().empty()) send_error(ready.error().message(), "protocol");
      return;
    }
    // recvmsg, not read: read(2) would drop (close) fds sent with an exec frame unseen.
    UniqueFd fds[8];
    std::size_t nfds = 0;
    auto n = sys::recv_with_fds(fd_.get(), buf, sizeof buf, fds, 8, &nfds);
    if (!n && n.error().code == 0) {  // more fds than fit: the kernel closed the rest
      send_error(
          "a read carried more file descriptors than an exec frame's " + std::to_string(kExecFds),
          "protocol");
      return;
    }
    if (!n || *n == 0) return;  // hang-up or error: the session ends
    if (!feed(std::string_view(buf, static_cast<std::size_t>(*n)))) return;
    if (nfds > 0 && !take_fds(fds, nfds)) return;
    if (!on_frames(decoder)) return;
  }
}

bool Connection::on_frames(FrameDecoder& decoder) {
  for (;;) {
    auto frame = decoder.next();
    if (!frame) {
      send_error(frame.error().message(), "protocol");
      return false;
    }
    if (!frame->has_value()) return true;
    auto message = decode_client_frame(**frame, decoder.last_payload_bytes());
    if (!message) {
      send_error(message.error().message(), "protocol");
      return false;
    }
    auto fds = claim_fds(4 + decoder.last_payload_bytes());
    if (!on_frame(*message, decoder, std::move(fds))) return false;
  }
}

bool Connection::on_frame(const ClientFrame& frame, FrameDecoder& decoder,
                          std::optional<ExecFds> fds) {
  const auto type = static_cast<ClientMessage>(frame.index());
  if (fds && type != ClientMessage::kExec) {
    send_error(std::to_string(kExecFds) + " file descriptors came with a '" + type_of(frame) +
                   "' frame (only an exec frame carries them: its stdin, stdout and stderr)",
               "protocol");
    return false;  // the fds close with `fds`, before anything of the frame is done
  }
  if (const auto* console = std::get_if<ConsoleMsg>(&frame); console && !greeted_) {
    // This connection is a session's console from now on.
    if (!attach_console(consoles_, console->session, console->token, peer_.uid, fd_, decoder))
      send_error("console: no session waits for a console with this token", "console");
    return false;
  }
  if (!greeted_ && type != ClientMessage::kHello) {
    send_error("the first frame must be 'hello'", "protocol");
    return false;
  }
  switch (type) {
    case ClientMessage::kHello:
      if (!greeted_) {
        if (!on_hello(std::get<HelloMsg>(frame))) return false;
        // Authenticated: frames up to the protocol's limit, and nothing held from the budget.
        decoder.set_max_frame_bytes(kMaxFrameBytes);
        (void)before_hello_.set(0);
        return true;
      }
      send_error("'hello' was already received", "protocol");
      return false;
    case ClientMessage::kCall:
      on_call(std::get<CallMsg>(frame), decoder.last_payload_bytes());
      return true;
    case ClientMessage::kCancel:
      // Marked before the flag is raised: the call's record, written once it stops, says so.
      session_.call_ends->cancelled_by_person(std::get<CancelMsg>(frame).id);
      calls_.cancel(std::get<CancelMsg>(frame).id);
      return true;
    case ClientMessage::kAnswer:
      // The agent's own connection never answers: the person's answers come only from the
      // console channel (console_link.h). Dropped unread and unanswered, so an agent sending
      // them neither decides anything nor makes moatd hold or write anything.
      return true;
    case ClientMessage::kBye:
      finish();  // every process of the session is gone and session.end is on disk
      send(ByeMsg{}.to_json());
      // The client has its answer, and its EOF, before the session's state (audit log, file
      // index, policy, threads, the keeper and its cgroup) is freed with this connection.
      writer_.close();
      return false;
    case ClientMessage::kConsole:
      send_error("'console' opens a console connection; it cannot follow 'hello'", "protocol");
      return false;
    case ClientMessage::kExec:
      on_exec(std::get<ExecMsg>(frame), decoder.last_payload_bytes(), std::move(fds));
      return true;
  }
  return false;
}

Result<void> Connection::on_hello(const HelloMsg& hello) {
  const ConsoleSource console = console_fd_.valid()    ? ConsoleSource::kSocketpair
                                : consoles_ != nullptr ? ConsoleSource::kToken
                                                       : ConsoleSource::kNone;
  MOAT_TRY(check_quotas());
  HelloSteps steps(options_, deps_, peer_, hello, console);
  for (const auto& [step, run] : kHelloChecklist)
    if (auto r = (steps.*run)(); !r) return refuse(step, r.error(), steps);
  session_ = std::move(steps.state());
  count_audit_bytes();  // session.start's bytes too, before any call can be decided
  asks_ = std::make_unique<AskBroker>(session_.headless);
  gate_ = std::make_unique<CallGate>(session_, *asks_, mutations_);
  McpHostOptions mcp_options;
  if (options_.mcp_restart_backoff_ms > 0)
    mcp_options.restart_backoff = std::chrono::milliseconds(options_.mcp_restart_backoff_ms);
  // Their tools join the welcome's.
  session_.mcp = start_mcp_servers(session_, *asks_, mcp_options);
  // A connection's ask goes to the person like a command's; finish() stops the proxy before
  // the broker goes.
  if (session_.net_proxy)
    session_.net_proxy->set_ask(
        [asks = asks_.get()](policy::Decision d, const std::string& call, const std::string& what,
                             const std::atomic<bool>& cancel, json& answer) {
          return asks->ask(std::move(d), call, what, cancel, answer);
        });
  greeted_ = true;
  send_welcome();
  // A server's state changes after the welcome reach the client as they happen (/mcp).
  if (session_.mcp)
    session_.mcp->set_on_status(
        [this](const McpServerStatus& s) { send(McpStatusMsg{s}.to_json()); });
  return {};
}

Result<void> Connection::check_quotas() {
  if (quotas_ == nullptr) return {};
  auto place = quotas_->sessions.take(peer_.uid);
  Result<void> audit_left =
      place ? quotas_->audit_bytes.check(peer_.uid) : Result<void>(fail(place.error()));
  if (!audit_left) {
    send_error(audit_left.error().message(), "quota");
    return audit_left;
  }
  session_place_ = std::move(*place);
  return {};
}

void Connection::count_audit_bytes() {
  if (quotas_ == nullptr || !session_.audit) return;
  session_.audit->set_admit([quotas = quotas_, uid = peer_.uid](std::string_view type,
                                                                std::size_t bytes) {
    return quotas->audit_bytes.admit(uid, type, bytes);
  });
}

Result<void> Connection::refuse(HelloStep step, const Error& error, HelloSteps& steps) {
  const HelloStepInfo& info = hello_step_info(step);
  send_error(info.frame_prefix + error.message(), info.code);
  if (info.audit_refusal)
    (void)steps.state().record(std::string(audit::SessionRefused::kType),
                               audit::SessionRefused{error.message(), steps.peer_json()}.to_json());
  return fail(error);
}

void Connection::send_welcome() {
  WelcomeMsg welcome{
      kProtocolVersion,
      session_.id,
      session_.tool_specs,
      session_.workspace,
      session_.audit ? session_.audit->path() : "",
      to_json(session_.session->describe()),
      "",
      {{"layers", session_.policy->layers_json()},
       {"hash", session_.policy->policy_hash()},
       {"wallTime", session_.wall_time}},
      session_.mcp ? session_.mcp->status() : std::vector<McpServerStatus>{}};
  if (!session_.headless) {
    auto token = console_.open(std::move(console_fd_), consoles_, session_.id, peer_.uid);
    if (token) welcome.console_token = *token;
    asks_->set_console(console_.link());
  }
  send(welcome.to_json());
}

void Connection::on_call(const CallMsg& m, std::size_t frame_bytes) {
  auto cancel = calls_.start(m.id, frame_bytes);
  if (!cancel) {
    send(ResultMsg{m.id, tools::ToolResult::error(cancel.error().message())}.to_json());
    return;
  }
  ++call_count_;
  session_.call_ends->start(m.id, *cancel);
  // edit/write take their place in the session's mutation queue here, on the thread that
  // reads frames, so they run in the order they arrived whatever order their threads start.
  tools::CallContext order;
  order.mutations = &mutations_;
  tools::take_mutation_ticket(m.tool, order);
  GateCall call{m.id,
                m.tool,
                m.arguments,
                *cancel,
                std::move(order.mutation_ticket),
                [this, id = m.id](std::string_view chunk) {
                  send(ProgressMsg{id, std::string(chunk)}.to_json());
                },
                [this, id = m.id](const json& decided) {
                  send(ProgressMsg{id, "", decided}.to_json());
                }};
  try {
    threads_.spawn([this, call = std::move(call), frame_bytes] {
      tools::ToolResult result = run_call_guarded(call.id, [&] { return gate_->run(call); }, false);
      say_if_ended(call.id, result);
      // The id is free before its result goes out: a client may reuse it as soon as it reads
      // the result (issue 26 item 14: freed after the send, the reuse was "already running").
      calls_.end(call.id, frame_bytes);
      send(ResultMsg{call.id, std::move(result)}.to_json());
    });
  } catch (const std::system_error& e) {
    fail_unstarted(m.id, frame_bytes, false, e);
  }
}

void Connection::fail_unstarted(const std::string& id, std::size_t frame_bytes, bool exec,
                                const std::system_error& e) {
  (void)session_.call_ends->finish(id);
  calls_.end(id, frame_bytes);
  const std::string why = no_thread_for("call", e);
  if (exec) exec_running_ = false;
  send(ResultMsg{id, exec ? exec_not_run(why, "sandbox") : tools::ToolResult::error(why)}
           .to_json());
}

bool Connection::take_fds(UniqueFd (&fds)[8], std::size_t nfds) {
  std::string why;
  // Before the hello, only a read that completes the first frame (the hello, answered before
  // the next read) may bring fds: a client that has not said a whole hello cannot park any.
  if (!greeted_ && !decoder_.holds_frame()) why = "file descriptors before a whole 'hello'";
  else if (nfds != kExecFds) why = std::to_string(nfds) + " file descriptors in one message";
  else if (exec_fds_) why = "file descriptors while another exec frame's wait for it";
  if (!why.empty()) {
    send_error(why + " (only an exec frame carries them: its stdin, stdout and stderr)",
               "protocol");
    return false;  // the fds close with `fds`
  }
  exec_fds_.emplace();
  for (std::size_t i = 0; i < kExecFds; ++i) (*exec_fds_)[i] = std::move(fds[i]);
  // The read's bytes are all in the decoder (feed came first): its last byte is the last of
  // what is buffered.
  fds_due_ = decoder_.buffered();
  return true;
}

std::optional<ExecFds> Connection::claim_fds(std::size_t frame_bytes) {
  if (!exec_fds_) return std::nullopt;
  if (frame_bytes < fds_due_) {  // the frame ended before the byte the fds came with
    fds_due_ -= frame_bytes;
    return std::nullopt;
  }
  std::optional<ExecFds> theirs = std::move(exec_fds_);
  exec_fds_.reset();
  return theirs;
}

void Connection::on_exec(const ExecMsg& m, std::size_t frame_bytes,
                         std::optional<ExecFds> fds) {
  auto refuse = [&](const std::string& why) {
    send(ResultMsg{m.id, exec_not_run(why, "sandbox")}.to_json());
  };
  if (!fds)
    return refuse(
        "exec: the frame came without its stdin, stdout and stderr "
        "(3 file descriptors, SCM_RIGHTS)");
  auto stdio = std::make_shared<ExecFds>(std::move(*fds));
  auto checked = check_exec_stdio(*stdio);
  if (!checked) return refuse(checked.error().message());
  if (exec_running_.exchange(true)) return refuse("exec: one exec runs at a time per connection");
  auto cancel = calls_.start(m.id, frame_bytes);
  if (!cancel) {
    exec_running_ = false;
    return refuse(cancel.error().message());
  }
  ++call_count_;
  session_.call_ends->start(m.id, *cancel);
  try {
    threads_.spawn([this, m, stdio, terminal = checked->terminal, cancel = *cancel, frame_bytes] {
      ExecSpec spec;
      for (std::size_t i = 0; i < kExecFds; ++i) spec.stdio[i] = (*stdio)[i].get();
      spec.terminal = terminal;
      tools::ToolResult result =
          run_call_guarded(m.id, [&] { return gate_->run_exec(m, spec, cancel); }, true);
      say_if_ended(m.id, result);
      // Closed before the result: the client's pipe readers see EOF and its pty relay sees
      // the terminal hang up once the client lets go of its own copies.
      for (UniqueFd& fd : *stdio) fd.reset();
      // The id and the connection's exec slot are free before the result goes out, as a
      // call's (on_call).
      calls_.end(m.id, frame_bytes);
      exec_running_ = false;
      send(ResultMsg{m.id, std::move(result)}.to_json());
    });
  } catch (const std::system_error& e) {
    fail_unstarted(m.id, frame_bytes, true, e);
  }
}

// The proxy's `net` record (call_ended) is the audit's word on it; the model and the person
// read it here, and the call record shows the kill.
void Connection::say_if_ended(const std::string& id, tools::ToolResult& result) {
  const std::string why = session_.call_ends->finish(id);
  if (why.empty()) return;
  result.is_error = true;
  result.content.push_back({{"type", "text"}, {"text", call_ended_note(why)}});
  if (!result.details.is_object()) result.details = nlohmann::json::object();
  result.details["callEnded"] = why;
}

void Connection::finish() {
  if (finished_) return;
  finished_ = true;
  calls_.cancel_all();
  threads_.join_all();
  session_.mcp.reset();  // the servers end before the session's namespaces go
  console_.close(consoles_, session_.id);
  session_.net_proxy.reset();  // its last `net` records come before session.end
  session_.runner.reset();
  // Kills the session's init, and with it every process of the session. The keeper's reaping
  // and the cgroup's removal wait for the session's destruction, after the bye's answer.
  if (session_.session) session_.session->end();
  if (greeted_) {
    const auto secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_);
    audit::SessionEnd end{call_count_, secs.count(), std::nullopt, std::nullopt};
    // After every process of the session is gone: what a process left running after its call
    // created (a `sleep 1; git init docs &`) is found here, and nothing can make another.
    if (nlohmann::json removed = remove_nested_git(session_); !removed.empty()) {
      end.nested_git_removed = std::move(removed);
      end.nested_git_reason = kNestedGitReason;
    }
    (void)session_.record(std::string(audit::SessionEnd::kType), end.to_json());
  }
  session_place_.reset();  // the session is gone: its place in the user's quota is free
}

}  // namespace

void Supervisor::serve_connection(UniqueFd conn, UniqueFd console) {
  serve(std::move(conn), std::move(console), nullptr);
}

void Supervisor::serve(UniqueFd conn, UniqueFd console, ConsoleRegistry* consoles) {
  // A shared moatd (consoles != null) bounds what all its unauthenticated connections hold.
  UnauthenticatedBytes* unauthenticated = consoles != nullptr ? &unauthenticated_ : nullptr;
  std::size_t peak = 0;
  auto peer = peer_credentials(conn.get());
  if (!peer) {
    MOAT_LOG_ERROR("%s", peer.error().message().c_str());
    return;
  }
  // A resident moatd's own checks of this peer (owner only, typed exec): sandbox/resident_peer.h.
  auto options = options_for_peer(options_, conn.get(), *peer);
  if (!options) return refuse_connection(std::move(conn), options.error().message());
  try {
    Connection c(*options, deps_, std::move(conn), *peer, std::move(console), consoles,
                 unauthenticated, consoles != nullptr ? &quotas_ : nullptr);
    c.run();
    peak = c.peak_frame_buffer();
  } catch (const std::exception& e) {
    // A bug must not take the daemon down with every other client's session.
    MOAT_LOG_ERROR("connection from pid %d ended by an exception: %s", peer->pid, e.what());
  }
  // A large frame's buffer is unmapped when freed (moatd_main's M_MMAP_THRESHOLD), but
  // parsing it left many small blocks in this thread's heap: give their pages back too.
  if (peak > (1u << 20)) malloc_trim(0);
}

Result<void> Supervisor::serve_socket(const ListeningSocket& socket,
                                      const std::atomic<bool>& stop) {
  const int lfd = socket.fd();
  ThreadSet clients;  // a system moatd serves session after session: join each when it ends
  ConnectionLimit limit(kMaxConnectionsPerUser, kMaxConnections);
  IdleExit idle(options_.idle_exit_s, socket);
  while (!stop.load()) {
    pollfd p{lfd, POLLIN, 0};
    int r = ::poll(&p, 1, static_cast<int>(ticks::kAcceptLoop.count()));
    clients.join_finished();
    if (r <= 0 && idle.is_over(clients.size())) break;  // a resident moatd's end (idle_exit.h)
    if (r <= 0) continue;
    int c = ::accept4(lfd, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) continue;
    auto slot = take_or_refuse(c, limit);
    if (!slot) continue;
    try {
      clients.spawn([this, c, slot = *slot] { serve(UniqueFd(c), UniqueFd(), &consoles_); });
    } catch (const std::system_error& e) {  // the accept loop's end would be moatd's
      refuse_connection(UniqueFd(c), no_thread_for("connection", e));
    }
  }
  clients.join_all();
  return {};
}

}  // namespace moat::sandbox
