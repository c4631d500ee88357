// agent/client.cc: moatd client: spawning a private moatd, framing, the reader thread.
#include "agent/client.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <boost/process/args.hpp>
#include <boost/process/child.hpp>
#include <boost/process/env.hpp>
#include <boost/process/exe.hpp>
#include <boost/process/extend.hpp>
#include <boost/process/io.hpp>

#include <climits>
#include <cstdio>
#include <cstdlib>

#include "base/byte_strings.h"
#include "base/host_defaults.h"
#include "base/log.h"
#include "base/sys.h"
#include "sandbox/protocol.h"

namespace moat::agent {
namespace {

using nlohmann::json;
namespace bp = boost::process;

std::string dirname_of(const std::string& p) {
  auto slash = p.rfind('/');
  return slash == std::string::npos ? "." : p.substr(0, slash);
}

bool is_executable(const std::string& p) { return ::access(p.c_str(), X_OK) == 0; }

// The environment moatd gets: enough to find its state and config directories, and
// nothing else. API keys and tokens stay in the agent process.
bp::environment scrubbed_environment() {
  bp::environment env;
  env["PATH"] = kSystemPath;
  for (const char* key : {"HOME", "XDG_STATE_HOME", "XDG_CONFIG_HOME", "MOAT_LOG", "MOAT_AUDIT_DIR",
                          "MOAT_SESSIONS_DIR", "MOAT_POLICY_DIR", "MOAT_USER_POLICY_DIR",
                          "MOAT_TRUST_DIR", "LANG"}) {
    if (const char* v = std::getenv(key); v != nullptr) env[key] = v;
  }
  return env;
}

}  // namespace

std::string find_moatd() {
  if (const char* v = std::getenv("MOATD_BIN"); v != nullptr && *v != '\0') return v;
  char self[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n > 0) {
    self[n] = '\0';
    const std::string dir = dirname_of(self);
    for (const std::string& c : {dir + "/moatd", dir + "/../sandbox/moatd"})
      if (is_executable(c)) return c;
  }
  return "moatd";
}

namespace {

// A connected pair whose second end survives exec (close-on-exec cleared on it only).
Result<std::pair<UniqueFd, UniqueFd>> pair_for_child() {
  MOAT_ASSIGN_OR_RETURN(sys::FdPair sv, sys::make_socketpair(SOCK_STREAM));
  std::pair<UniqueFd, UniqueFd> p{std::move(sv.first), std::move(sv.second)};
  if (::fcntl(p.second.get(), F_SETFD, 0) != 0) return fail(Error::from_errno("fcntl", errno));
  return p;
}

}  // namespace

Result<std::unique_ptr<MoatdClient>> MoatdClient::spawn_private(
    const std::vector<std::string>& moatd_args, bool console) {
  MOAT_ASSIGN_OR_RETURN(auto agent, pair_for_child());
  std::vector<std::string> args = {"--fd", std::to_string(agent.second.get())};
  std::pair<UniqueFd, UniqueFd> person;
  if (console) {
    MOAT_ASSIGN_OR_RETURN(person, pair_for_child());
    args.insert(args.end(), {"--console-fd", std::to_string(person.second.get())});
  }
  args.insert(args.end(), moatd_args.begin(), moatd_args.end());
  const std::string exe = find_moatd();
  pid_t pid = -1;
  try {
    // setsid before exec: from its first instruction moatd is out of our process group, so
    // Ctrl-C or a SIGTERM to the group (timeout, CI runners, job control) never reaches it.
    bp::child child(
        bp::exe = exe, bp::args = args, scrubbed_environment(),
        bp::extend::on_exec_setup = [](auto&) { (void)::setsid(); });
    pid = child.id();
    child.detach();  // reaped in ~MoatdClient (or by the console)
  } catch (const std::exception& e) {
    return fail("starting moatd (" + exe + "): " + e.what());
  }
  auto client = std::unique_ptr<MoatdClient>(new MoatdClient(std::move(agent.first), pid));
  client->console_ = std::move(person.first);
  return client;
}

Result<void> MoatdClient::start_detached(const std::vector<std::string>& moatd_args,
                                         const std::string& log_path) {
  const std::string exe = find_moatd();
  std::unique_ptr<FILE, int (*)(FILE*)> log(std::fopen(log_path.c_str(), "ae"), std::fclose);
  if (!log) return fail(Error::from_errno("fopen", errno, log_path));
  try {
    // setsid, then fork once more and let the middle child exit: moatd is nobody's child here
    // (no zombie while this process runs) and has no controlling terminal. Only fds 0-2 reach
    // it: every other fd of ours is close-on-exec (base/sys.h).
    bp::child child(bp::exe = exe, bp::args = moatd_args, scrubbed_environment(),
                    bp::std_in < bp::null, bp::std_out > log.get(), bp::std_err > log.get(),
                    bp::extend::on_exec_setup = [](auto&) {
                      (void)::setsid();
                      if (::fork() != 0) ::_exit(0);
                    });
    child.wait();
  } catch (const std::exception& e) {
    return fail("starting moatd (" + exe + "): " + e.what());
  }
  return {};
}

Result<std::unique_ptr<MoatdClient>> MoatdClient::connect(const std::string& socket_path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socket_path.size() >= sizeof addr.sun_path)
    return fail("socket path too long: " + socket_path);
  socket_path.copy(addr.sun_path, socket_path.size());
  MOAT_ASSIGN_OR_RETURN(UniqueFd fd, sys::make_socket(AF_UNIX, SOCK_STREAM));
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
    return fail(Error::from_errno("connect", errno, socket_path));
  return std::unique_ptr<MoatdClient>(new MoatdClient(std::move(fd), -1, socket_path));
}

Result<void> MoatdClient::attach_console(const std::string& session, const std::string& token) {
  MOAT_ASSIGN_OR_RETURN(std::unique_ptr<MoatdClient> c, connect(socket_path_));
  MOAT_TRY(c->send(sandbox::ConsoleMsg{session, token}));
  // moatd's reply: attached, or an error frame and a close.
  auto reply = sandbox::read_server_frame(c->frames_);
  if (!reply) return fail("console channel: " + reply.error().message());
  if (!reply->has_value()) return fail(std::string("console channel: moatd closed the connection"));
  if (!std::holds_alternative<sandbox::AttachedMsg>(**reply)) {
    const auto* refusal = std::get_if<sandbox::ErrorMsg>(&**reply);
    return fail("console channel refused: " +
                (refusal != nullptr ? refusal->message : std::string("moatd did not attach it")));
  }
  c->closed_ = true;  // the console speaks on it from now on, not this client
  console_ = std::move(c->fd_);
  return {};
}

MoatdClient::~MoatdClient() {
  bye();
  if (reader_.joinable()) reader_.join();
  if (child_pid_ > 0) {
    int status = 0;
    while (::waitpid(child_pid_, &status, 0) < 0 && errno == EINTR) {}
  }
}

Result<void> MoatdClient::send_json(const json& frame, const int* fds, std::size_t nfds) {
  // The protocol is JSON text, which holds only UTF-8: a workspace or argv word with another
  // byte would reach moatd with U+FFFD in its place, naming a path nobody chose. Refused.
  if (auto bad = first_non_utf8_string(frame))
    return fail("'" + hex_escape_non_utf8(*bad) +
                "' is not UTF-8, and moatd's protocol cannot carry it exactly");
  std::lock_guard<std::mutex> lock(send_mu_);
  if (nfds == 0) return sandbox::send_frame(fd_.get(), frame);
  // The fds ride on the 4 length bytes: moatd holds them when the frame's payload arrives.
  MOAT_ASSIGN_OR_RETURN(const std::string bytes, sandbox::try_encode_frame(frame));
  MOAT_TRY(sys::send_with_fds(fd_.get(), bytes.data(), 4, fds, nfds));
  return sys::write_all(fd_.get(), bytes.data() + 4, bytes.size() - 4);
}

void MoatdClient::start_reader() {
  std::call_once(reader_once_, [this] {
    std::thread t([this] { read_frames(/*until_welcome=*/false); });
    std::lock_guard<std::mutex> lock(mu_);
    reader_ = std::move(t);
  });
}

bool MoatdClient::reader_started() {
  std::lock_guard<std::mutex> lock(mu_);
  return reader_.joinable();
}

bool MoatdClient::hello_answered() {
  std::lock_guard<std::mutex> lock(mu_);
  return welcome_.has_value() || refusal_.has_value();
}

void MoatdClient::mark_closed(const std::string& why) {
  std::lock_guard<std::mutex> lock(mu_);
  closed_ = true;
  fatal_ = why;
  cv_.notify_all();
}

void MoatdClient::read_frames(bool until_welcome) {
  std::string why = "moatd closed the connection";
  // Frames that arrived with the welcome, read by hello(), are handled first: they wait in
  // the reader.
  while (!(until_welcome && hello_answered())) {
    auto frame = sandbox::read_server_frame(frames_);
    if (!frame) {
      why = "moatd sent a bad frame: " + frame.error().message();
      break;
    }
    if (!frame->has_value() || !dispatch(std::move(**frame), &why)) break;
  }
  if (!(until_welcome && hello_answered())) mark_closed(why);
}

bool MoatdClient::dispatch(sandbox::ServerFrame frame, std::string* why) {
  std::unique_lock<std::mutex> lock(mu_);
  if (auto* welcome = std::get_if<sandbox::WelcomeMsg>(&frame)) {
    welcome_ = std::move(*welcome);
  } else if (auto* progress = std::get_if<sandbox::ProgressMsg>(&frame)) {
    if (!progress->decided.is_null()) {
      if (pending_.count(progress->id) == 0 || !on_decided_) return true;
      lock.unlock();
      on_decided_(progress->id, progress->decided);
      return true;
    }
    auto it = pending_.find(progress->id);
    if (it == pending_.end() || !it->second->on_progress) return true;
    auto cb = it->second->on_progress;
    lock.unlock();  // the callback prints; results and other calls must not wait for it
    cb(progress->chunk);
    return true;
  } else if (auto* status = std::get_if<sandbox::McpStatusMsg>(&frame)) {
    if (!on_mcp_status_) return true;
    lock.unlock();
    on_mcp_status_(status->server);
    return true;
  } else if (auto* result = std::get_if<sandbox::ResultMsg>(&frame)) {
    auto it = pending_.find(result->id);
    if (it == pending_.end()) return true;
    it->second->result = std::move(result->result);
    it->second->done = true;
  } else if (auto* error = std::get_if<sandbox::ErrorMsg>(&frame)) {
    *why = "moatd: " + error->message;
    // A refused hello: kept for hello() to report.
    if (!welcome_ && !refusal_) refusal_ = std::move(*error);
  } else if (std::holds_alternative<sandbox::ByeMsg>(frame)) {
    return false;
  }
  // ask and attached: questions go to the person's console channel, never to the agent's
  // connection (and the agent could not answer them: moatd takes answers only from the
  // console).
  cv_.notify_all();
  return true;
}

namespace {

std::string refused(WelcomeError* why, std::string code, std::string message) {
  if (why != nullptr) *why = WelcomeError{std::move(code), message};
  return message;
}

}  // namespace

Result<Welcome> MoatdClient::hello(const std::string& workspace, bool headless, WelcomeError* why,
                                   sandbox::NetworkRequest network,
                                   std::vector<sandbox::BindMount> binds) {
  MOAT_TRY(send_hello(workspace, headless, why, network, std::move(binds)));
  return await_welcome(why);
}

Result<void> MoatdClient::send_hello(const std::string& workspace, bool headless, WelcomeError* why,
                                     sandbox::NetworkRequest network,
                                     std::vector<sandbox::BindMount> binds) {
  if (!is_utf8(workspace))
    return fail(refused(why, "workspace",
                        "workspace '" + hex_escape_non_utf8(workspace) + "'" +
                            " is not UTF-8: moatd's protocol cannot name it exactly, so "
                            "no session is started (use a path whose names are UTF-8)"));
  sandbox::HelloMsg hello;
  hello.version = hello_version_;
  hello.workspace = workspace;
  hello.headless = headless;
  hello.client = std::string("moat/") + MOAT_VERSION;
  hello.network = network;
  hello.binds = std::move(binds);
  hello.typed_exec = ask_typed_exec_;
  hello.env = hello_env_;
  if (auto r = send(hello); !r) return fail(refused(why, "io", r.error().message()));
  return {};
}

Result<Welcome> MoatdClient::await_welcome(WelcomeError* why) {
  // No reader thread yet: read until the welcome (or a refusal) on this thread.
  if (!reader_started()) read_frames(/*until_welcome=*/true);
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return welcome_ || refusal_ || closed_; });
  if (refusal_) return fail(refused(why, refusal_->code, refusal_->message));
  if (!welcome_) return fail(refused(why, "io", fatal_));
  return *welcome_;
}

tools::ToolResult MoatdClient::call(const std::string& id, const std::string& tool,
                                    const json& arguments,
                                    const std::function<void(std::string_view)>& on_progress,
                                    std::stop_token stop) {
  // moatd closes a session whose client breaks a bound (a 200 KiB heredoc command, an
  // oversized frame): a call the model made too large is refused here, as its own error.
  const json frame = sandbox::CallMsg{id, tool, arguments}.to_json();
  auto send_it = [&]() -> Result<void> {
    MOAT_TRY(sandbox::CallMsg::from_json(frame));
    return send_json(frame);
  };
  return await_result(id, send_it, on_progress, stop);
}

tools::ToolResult MoatdClient::exec(const sandbox::ExecMsg& m, const int (&stdio)[3]) {
  start_reader();
  if (auto sent = send_exec(m, stdio); !sent)
    return tools::ToolResult::error("tool not run: " + sent.error().message());
  return await_exec(m.id);
}

Result<void> MoatdClient::send_exec(const sandbox::ExecMsg& m, const int (&stdio)[3]) {
  const json frame = m.to_json();
  return start_call(m.id, nullptr, [&]() -> Result<void> {
    MOAT_TRY(sandbox::ExecMsg::from_json(frame));
    return send_json(frame, stdio, 3);
  });
}

tools::ToolResult MoatdClient::await_exec(const std::string& id) {
  start_reader();
  return await_call(id, {});
}

tools::ToolResult MoatdClient::await_result(
    const std::string& id, const std::function<Result<void>()>& send_it,
    const std::function<void(std::string_view)>& on_progress, const std::stop_token& stop) {
  start_reader();
  if (auto sent = start_call(id, on_progress, send_it); !sent)
    return tools::ToolResult::error("tool not run: " + sent.error().message());
  return await_call(id, stop);
}

Result<void> MoatdClient::start_call(const std::string& id,
                                     const std::function<void(std::string_view)>& on_progress,
                                     const std::function<Result<void>()>& send_it) {
  auto p = std::make_shared<Pending>();
  p->on_progress = on_progress;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return fail(fatal_);
    pending_[id] = p;
  }
  auto r = send_it();
  if (!r) {
    std::lock_guard<std::mutex> lock(mu_);
    pending_.erase(id);
  }
  return r;
}

tools::ToolResult MoatdClient::await_call(const std::string& id, const std::stop_token& stop) {
  std::shared_ptr<Pending> p;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = pending_.find(id);
    if (it == pending_.end()) return tools::ToolResult::error("tool result lost: " + id);
    p = it->second;
  }
  // Before the lock: a stop already requested runs the callback here, and it takes mu_.
  const std::stop_callback wake(stop, [this] {
    std::lock_guard<std::mutex> lock(mu_);
    cv_.notify_all();
  });
  std::unique_lock<std::mutex> lock(mu_);
  for (bool cancel_sent = false;;) {
    cv_.wait(lock, [&] { return p->done || closed_ || (!cancel_sent && stop.stop_requested()); });
    if (p->done || closed_) break;
    cancel_sent = true;
    lock.unlock();
    (void)send(sandbox::CancelMsg{id});
    lock.lock();
  }
  pending_.erase(id);
  if (!p->done) return tools::ToolResult::error("tool result lost: " + fatal_);
  return p->result;
}

void MoatdClient::bye() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return;
  }
  (void)send(sandbox::ByeMsg{});
  // moatd answers bye after finishing its calls; then the reader sees EOF.
  ::shutdown(fd_.get(), SHUT_WR);
}

}  // namespace moat::agent
