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

#include <climits>
#include <cstdlib>

#include "base/byte_strings.h"
#include "base/host_defaults.h"
#include "base/log.h"
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
  for (const char* key : {"HOME", "XDG_STATE_HOME", "XDG_CONFIG_HOME", "MOAT_LOG",
                          "MOAT_AUDIT_DIR", "MOAT_SESSIONS_DIR", "MOAT_POLICY_DIR", "MOAT_TRUST_DIR",
                          "LANG"}) {
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
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
    return fail(Error::from_errno("socketpair", errno));
  std::pair<UniqueFd, UniqueFd> p{UniqueFd(sv[0]), UniqueFd(sv[1])};
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
    bp::child child(bp::exe = exe, bp::args = args, scrubbed_environment(),
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

Result<std::unique_ptr<MoatdClient>> MoatdClient::connect(const std::string& socket_path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socket_path.size() >= sizeof addr.sun_path) return fail("socket path too long: " + socket_path);
  socket_path.copy(addr.sun_path, socket_path.size());
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return fail(Error::from_errno("socket", errno));
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
    return fail(Error::from_errno("connect", errno, socket_path));
  return std::unique_ptr<MoatdClient>(new MoatdClient(std::move(fd), -1, socket_path));
}

Result<void> MoatdClient::attach_console(const std::string& session, const std::string& token) {
  MOAT_ASSIGN_OR_RETURN(std::unique_ptr<MoatdClient> c, connect(socket_path_));
  MOAT_TRY(c->send({{"type", "console"}, {"session", session}, {"token", token}}));
  // moatd's reply: attached, or an error frame and a close.
  char buf[4096];
  for (;;) {
    auto frame = c->decoder_.next();
    if (!frame) return fail("console channel: " + frame.error().message());
    if (frame->has_value()) {
      const nlohmann::json& m = **frame;
      auto type = sandbox::validate_server_message(m);
      if (type && *type == sandbox::ServerMessage::kAttached) break;
      return fail("console channel refused: " + m.value("message", m.dump()));
    }
    ssize_t n = ::read(c->fd_.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return fail(std::string("console channel: moatd closed the connection"));
    c->decoder_.feed(std::string_view(buf, static_cast<std::size_t>(n)));
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
    while (::waitpid(child_pid_, &status, 0) < 0 && errno == EINTR) {
    }
  }
}

Result<void> MoatdClient::send(const json& m) {
  // The protocol is JSON text, which holds only UTF-8: a workspace or argv word with another
  // byte would reach moatd with U+FFFD in its place, naming a path nobody chose. Refused.
  if (auto bad = first_non_utf8_string(m))
    return fail("'" + hex_escape_non_utf8(*bad) + "' is not UTF-8, and moatd's protocol cannot carry it exactly");
  MOAT_ASSIGN_OR_RETURN(const std::string frame, sandbox::try_encode_frame(m));
  std::lock_guard<std::mutex> lock(send_mu_);
  std::size_t off = 0;
  while (off < frame.size()) {
    ssize_t n = ::send(fd_.get(), frame.data() + off, frame.size() - off, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail(Error::from_errno("send", errno, "moatd socket"));
    }
    off += static_cast<std::size_t>(n);
  }
  return {};
}

void MoatdClient::start_reader() {
  std::call_once(reader_once_, [this] {
    std::thread t([this] { reader_loop(); });
    std::lock_guard<std::mutex> lock(mu_);
    reader_ = std::move(t);
  });
}

void MoatdClient::mark_closed(const std::string& why) {
  std::lock_guard<std::mutex> lock(mu_);
  closed_ = true;
  fatal_ = why;
  cv_.notify_all();
}

bool MoatdClient::dispatch(json m, std::string* why) {
  auto type = sandbox::validate_server_message(m);
  if (!type) {
    *why = "moatd sent a bad frame: " + type.error().message();
    return false;
  }
  std::unique_lock<std::mutex> lock(mu_);
  switch (*type) {
    case sandbox::ServerMessage::kWelcome:
      welcome_ = std::move(m);
      cv_.notify_all();
      break;
    case sandbox::ServerMessage::kProgress: {
      auto it = pending_.find(m["id"].get<std::string>());
      if (it != pending_.end() && it->second->on_progress) {
        auto cb = it->second->on_progress;
        lock.unlock();
        cb(m["chunk"].get<std::string>());
      }
      break;
    }
    case sandbox::ServerMessage::kResult: {
      auto it = pending_.find(m["id"].get<std::string>());
      if (it != pending_.end()) {
        it->second->result = tools::ToolResult::from_json(m);
        it->second->done = true;
        cv_.notify_all();
      }
      break;
    }
    case sandbox::ServerMessage::kAsk:
    case sandbox::ServerMessage::kAttached:
      // Questions go to the person's console channel, never to the agent's connection
      // (and the agent could not answer them: moatd takes answers only from the console).
      break;
    case sandbox::ServerMessage::kError:
      *why = "moatd: " + m["message"].get<std::string>();
      if (!welcome_) {
        // A refused hello: keep the error frame for hello() to report.
        welcome_ = std::move(m);
        cv_.notify_all();
      }
      break;
    case sandbox::ServerMessage::kBye:
      return false;
  }
  return true;
}

bool MoatdClient::drain(std::string* why, bool until_welcome) {
  for (;;) {
    if (until_welcome) {
      std::lock_guard<std::mutex> lock(mu_);
      if (welcome_) return true;
    }
    auto frame = decoder_.next();
    if (!frame) {
      *why = "moatd sent a bad frame: " + frame.error().message();
      return false;
    }
    if (!frame->has_value()) return true;
    if (!dispatch(std::move(**frame), why)) return false;
  }
}

void MoatdClient::reader_loop() {
  char buf[65536];
  std::string why = "moatd closed the connection";
  // Frames that arrived with the welcome, read by hello(), are handled first.
  for (bool running = drain(&why, false); running;) {
    ssize_t n = ::read(fd_.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    decoder_.feed(std::string_view(buf, static_cast<std::size_t>(n)));
    running = drain(&why, false);
  }
  mark_closed(why);
}

Result<Welcome> MoatdClient::hello(const std::string& workspace, bool headless, WelcomeError* why) {
  auto set_why = [&](std::string code, std::string msg) {
    if (why != nullptr) *why = WelcomeError{std::move(code), msg};
    return fail(std::move(msg));
  };
  if (!is_utf8(workspace))
    return set_why("workspace", "workspace '" + hex_escape_non_utf8(workspace) + "'" +
                                    " is not UTF-8: moatd's protocol cannot name it exactly, so "
                                    "no session is started (use a path whose names are UTF-8)");
  if (auto r = send({{"type", "hello"}, {"version", sandbox::kProtocolVersion},
                     {"client", std::string("moat/") + MOAT_VERSION}, {"workspace", workspace},
                     {"headless", headless}});
      !r)
    return set_why("io", r.error().message());
  bool reader_running = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    reader_running = reader_.joinable();
  }
  if (!reader_running) {
    // No reader thread yet: read until the welcome (or a refusal) on this thread.
    std::string broke = "moatd closed the connection";
    char buf[65536];
    for (bool running = drain(&broke, true);;) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (welcome_ || !running) break;
      }
      ssize_t n = ::read(fd_.get(), buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        running = false;
        continue;
      }
      decoder_.feed(std::string_view(buf, static_cast<std::size_t>(n)));
      running = drain(&broke, true);
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (!welcome_) {
      closed_ = true;
      fatal_ = broke;
    }
  }
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return welcome_.has_value() || closed_; });
  if (!welcome_) return set_why("io", fatal_);
  const json& w = *welcome_;
  if (w["type"] == "error")
    return set_why(w.value("code", "protocol"), w["message"].get<std::string>());
  Welcome out;
  out.session = w["session"].get<std::string>();
  out.audit_path = w.value("audit", "");
  out.sandbox = w.value("sandbox", json::object());
  out.console_token = w.value("console_token", "");
  for (const auto& t : w["tools"])
    if (auto spec = tools::ToolSpec::from_json(t)) out.tools.push_back(std::move(*spec));
  return out;
}

tools::ToolResult MoatdClient::call(const std::string& id, const std::string& tool,
                                    const json& arguments,
                                    const std::function<void(std::string_view)>& on_progress,
                                    const std::atomic<bool>* cancel) {
  start_reader();
  auto p = std::make_shared<Pending>();
  p->on_progress = on_progress;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return tools::ToolResult::error("tool not run: " + fatal_);
    pending_[id] = p;
  }
  // moatd closes a session whose client breaks a bound (a 200 KiB heredoc command, an
  // oversized frame): a call the model made too large is refused here, as its own error.
  const json frame = {{"type", "call"}, {"id", id}, {"tool", tool}, {"arguments", arguments}};
  auto valid = sandbox::validate_client_message(frame);
  auto r = valid ? send(frame) : Result<void>(fail(valid.error()));
  if (!r) {
    std::lock_guard<std::mutex> lock(mu_);
    pending_.erase(id);
    return tools::ToolResult::error("tool not run: " + r.error().message());
  }
  std::unique_lock<std::mutex> lock(mu_);
  bool cancel_sent = false;
  while (!p->done && !closed_) {
    cv_.wait_for(lock, std::chrono::milliseconds(50));
    if (cancel != nullptr && cancel->load() && !cancel_sent) {
      cancel_sent = true;
      lock.unlock();
      (void)send({{"type", "cancel"}, {"id", id}});
      lock.lock();
    }
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
  (void)send({{"type", "bye"}});
  // moatd answers bye after finishing its calls; then the reader sees EOF.
  ::shutdown(fd_.get(), SHUT_WR);
}

}  // namespace moat::agent
