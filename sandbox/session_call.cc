// sandbox/session_call.cc: a session's calls on moatd's side (see session_linux.h): a call's
// sockets and request to the init, the worker's status, the init's start and exit records;
// a handler's and a created file's calls. The exec loop is session_exec.cc.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <thread>

#include "sandbox/exec_watch.h"
#include "sandbox/session_linux.h"
#include "sandbox/session_placeholders.h"
#include "sandbox/worker.h"

namespace moat::sandbox {
namespace {

using Clock = SessionClock;

pid_t host_pid_of(int pidfd) {
  std::ifstream in("/proc/self/fdinfo/" + std::to_string(pidfd));
  std::string key;
  while (in >> key) {
    if (key == "Pid:") {
      pid_t pid = -1;
      in >> pid;
      return pid;
    }
  }
  return -1;
}

// The call's io: a pipe for an exec's output, a socket for a handler's or create's data; none
// when the command writes to the caller's own fds (ExecSpec::stdio).
Result<sys::FdPair> call_io(bool exec_kind, const int* stdio) {
  if (stdio != nullptr) return sys::FdPair{};
  if (exec_kind) return sys::make_pipe();
  return sys::make_socketpair(SOCK_STREAM);
}

Clock::time_point after_seconds(double s) {
  return Clock::now() +
         std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

CallRequest call_of(WorkerKind kind, std::string path = "") {
  CallRequest r;
  r.kind = kind;
  r.path = std::move(path);
  return r;
}

void send_kill(int channel) {
  const char k = kKillRequest;
  (void)::send(channel, &k, 1, MSG_NOSIGNAL);
}

}  // namespace

LinuxSession::LinuxSession(SessionParts parts) : parts_(std::move(parts)) {
  if (auto pidfd = sys::pidfd_open(parts_.init); pidfd) init_pidfd_ = std::move(*pidfd);
}

LinuxSession::~LinuxSession() {
  end();
  parts_.keeper->end();  // the keeper and its namespaces; the cgroup goes with parts_ after it
}

void LinuxSession::end() {
  if (!parts_.ctl.valid()) return;  // ended before
  // The init is killed alone: its exit kills and reaps every process of its pid namespace
  // before its pidfd reads as ended, while the keeper, still holding the namespaces, only reaps
  // it and exits; their teardown is the destructor's. Without a pidfd the keeper is ended here,
  // and the init follows through its parent-death signal, as before.
  if (init_pidfd_.valid())
    (void)::syscall(SYS_pidfd_send_signal, init_pidfd_.get(), SIGKILL, nullptr, 0);
  else
    parts_.keeper->end();
  // Once the init is gone, so is every process of the session: nothing inside can still
  // report a placeholder, or write into one, while they are removed.
  if (init_pidfd_.valid()) {
    pollfd p{init_pidfd_.get(), POLLIN, 0};
    while (poll(&p, 1, 5000) < 0 && errno == EINTR) {}
  }
  std::vector<Placeholder> created = drain_placeholders(parts_.ctl.get());
  parts_.ctl.reset();
  remove_session_placeholders(std::move(created), parts_.workspace.get(), parts_.config,
                              parts_.bind_dirs);
}

bool LinuxSession::exec_waits_for_the_watch() const {
  return parts_.config.allow_without.count("exec_watch") == 0 &&
         parts_.config.test_skip_step != step_name(Step::kExecWatch);
}

// Hands the init the worker's ends of the call's sockets (and the command's own stdio), then
// the request on the call's channel.
Result<void> LinuxSession::send_request(sys::FdPair& channel, sys::FdPair& status, sys::FdPair& io,
                                        const int* stdio, const CallRequest& request) {
  int fds[kCallStdioFds] = {channel.second.get(), status.second.get(), io.second.get(), -1, -1};
  if (stdio != nullptr) std::copy(stdio, stdio + 3, fds + 2);
  const char kind = ctl_byte(stdio != nullptr ? CtlMsg::kCallStdio : CtlMsg::kCall);
  // One SOCK_SEQPACKET record per call: concurrent callers cannot interleave.
  if (auto sent = sys::send_with_fds(parts_.ctl.get(), &kind, 1, fds,
                                     stdio != nullptr ? kCallStdioFds : kCallFds);
      !sent)
    return fail(sent.error().with_context("session init"));
  channel.second.reset();
  status.second.reset();
  io.second.reset();
  return send_call_request(channel.first.get(), request);
}

Result<CallFds> LinuxSession::start(CallRequest request, std::unique_ptr<ExecWatch>* watch,
                                    const ExecSpec* spec) {
  const bool exec_kind = request.kind == WorkerKind::kExec;
  const int* stdio = spec != nullptr && spec->stdio[0] >= 0 ? spec->stdio : nullptr;
  const bool durable = spec != nullptr && spec->durable;
  const bool held = durable && exec_waits_for_the_watch();
  if (durable && !held) MOAT_TRY(spec->durable());
  const bool hook = spec != nullptr && spec->before_program;
  if (hook && !exec_waits_for_the_watch())
    return fail("the call needs the exec watch to run a step before its program "
                "(ExecSpec::before_program), and this session runs without it");
  MOAT_ASSIGN_OR_RETURN(sys::FdPair channel, sys::make_socketpair(SOCK_STREAM));
  // Set before the init can send: the kStarted record's credentials carry the worker's pid.
  const int on = 1;
  if (setsockopt(channel.first.get(), SOL_SOCKET, SO_PASSCRED, &on, sizeof on) != 0)
    return fail(Error::from_errno("setsockopt(SO_PASSCRED)", errno));
  // A socket, not a pipe: the exec watch's listener comes back on it (worker.cc).
  MOAT_ASSIGN_OR_RETURN(sys::FdPair status, sys::make_socketpair(SOCK_SEQPACKET));
  MOAT_ASSIGN_OR_RETURN(sys::FdPair io, call_io(exec_kind, stdio));
  request.skip = parts_.config.test_skip_step;
  // Its thread starts while the init prepares the worker, whose own exec waits on it.
  if (watch != nullptr && exec_kind)
    *watch = std::make_unique<ExecWatch>(
        spec != nullptr ? spec->observer : nullptr,
        static_cast<double>(parts_.config.limits.cpu_time_s),
        hook ? spec->before_program : ExecWatch::BeforeProgram());
  MOAT_TRY(send_request(channel, status, io, stdio, request));
  // The worker gets ready meanwhile and its exec waits on the watch, which is not served
  // yet. A failure returns here: the status socket closes with the listener unread in it,
  // which fails the worker's exec (ENOSYS), and the channel's EOF has the init kill it.
  if (held) MOAT_TRY(spec->durable());
  // The init sends its start record once start_worker returns, which for an exec worker
  // (vfork) is after the exec: the watch is served before it is waited for. A call the init
  // refused before any worker closes the status socket unused: the record then says why.
  auto reached = check_status(status.first.get(), watch);
  MOAT_ASSIGN_OR_RETURN(CallFds call, read_start_record(channel));
  if (!reached) return fail(reached.error());
  call.status = std::move(status.first);
  call.io = std::move(io.first);
  return call;
}

// The init's kStarted record, or why it started no worker.
Result<CallFds> LinuxSession::read_start_record(sys::FdPair& channel) {
  ChannelRecord rec{};
  UniqueFd pidfd;
  std::size_t nfds = 0;
  pid_t cred_pid = -1;
  if (parts_.config.test_delay_start_record_ms > 0)
    std::this_thread::sleep_for(
        std::chrono::milliseconds(parts_.config.test_delay_start_record_ms));
  MOAT_ASSIGN_OR_RETURN(std::size_t n, sys::recv_with_fds(channel.first.get(), &rec, sizeof rec,
                                                          &pidfd, 1, &nfds, &cred_pid));
  if (n != sizeof rec) return fail("session init closed the call (session ended?)");
  if (rec.type == ChannelMsg::kFailed && rec.value == E2BIG)
    return fail(
        Error{E2BIG, "protected paths: the workspace has more than " +
                         std::to_string(parts_.config.max_protect_walk_entries) +
                         " entries, so the per-call walk cannot find every path the "
                         "policy's globs protect or hide; the call is refused (fail closed)"});
  if (rec.type == ChannelMsg::kFailed)
    return fail(Error::from_errno("session init: start worker", rec.value));
  CallFds call;
  call.channel = std::move(channel.first);
  // Credentials that name the init itself mean it could not name the worker (see
  // send_record in session_init.cc): then the pidfd, read while the worker still lives.
  call.host_pid = cred_pid > 0 && cred_pid != parts_.init ? cred_pid
                  : pidfd.valid()                         ? host_pid_of(pidfd.get())
                                                          : -1;
  return call;
}

Result<void> LinuxSession::check_status(int status_fd, std::unique_ptr<ExecWatch>* watch) {
  for (;;) {
    StatusRecord rec{};
    UniqueFd fds[2];  // the listener, and the end of the worker's exec gate (worker.cc)
    std::size_t nfds = 0;
    MOAT_ASSIGN_OR_RETURN(std::size_t n,
                          sys::recv_with_fds(status_fd, &rec, sizeof rec, fds, 2, &nfds));
    if (n == 0) return {};
    if (n != sizeof rec) return fail("worker status: short record");
    UniqueFd& listener = fds[0];
    const bool is_listener = rec.step == static_cast<std::int32_t>(Step::kExecWatch) &&
                             rec.err == 0 && nfds == 2 && listener.valid();
    if (!is_listener)
      return fail(
          Error{rec.err, std::string("worker step ") + step_name(static_cast<Step>(rec.step))});
    // Nobody to serve it (a handler worker never sends one): closing it fails every exec
    // under it (ENOSYS), which is the closed way to fail.
    if (watch != nullptr && *watch) (*watch)->attach(std::move(listener), std::move(fds[1]));
  }
}

double LinuxSession::session_seconds_left() const {
  if (parts_.config.limits.session_wall_time_s <= 0) return 1e9;
  std::chrono::duration<double> used = Clock::now() - parts_.created;
  return parts_.config.limits.session_wall_time_s - used.count();
}

// Waits for the init's kExited record; returns the wait status. EOF = the session ended.
Result<int> LinuxSession::wait_exit(int channel, Clock::time_point deadline) {
  for (;;) {
    pollfd p{channel, POLLIN, 0};
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    int rc = poll(&p, 1, static_cast<int>(std::max<long long>(0, left.count())));
    if (rc == 0) {
      send_kill(channel);
      deadline = Clock::now() + std::chrono::seconds(5);
      continue;
    }
    if (rc < 0) {
      if (errno == EINTR) continue;
      return fail(Error::from_errno("poll", errno));
    }
    ChannelRecord rec{};
    MOAT_ASSIGN_OR_RETURN(bool got, sys::read_exact(channel, &rec, sizeof rec, true));
    if (!got) return fail("session ended during the call");
    if (rec.type == ChannelMsg::kExited) return rec.value;
  }
}

Result<std::string> LinuxSession::run_handler(std::string_view request) {
  MOAT_ASSIGN_OR_RETURN(CallFds call, start(call_of(WorkerKind::kHandler)));
  const double wall = parts_.config.limits.wall_time_s;
  const auto deadline = after_seconds(wall > 0 ? wall : 1e9);
  auto sent = sys::write_all(call.io.get(), request.data(), request.size());
  ::shutdown(call.io.get(), SHUT_WR);
  std::string response;
  char buf[65536];
  for (;;) {
    pollfd p{call.io.get(), POLLIN, 0};
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0 || poll(&p, 1, static_cast<int>(left.count())) == 0) {
      send_kill(call.channel.get());
      return fail(Error::from_errno("sandbox handler", ETIMEDOUT));
    }
    ssize_t n = ::read(call.io.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    response.append(buf, static_cast<std::size_t>(n));
  }
  MOAT_ASSIGN_OR_RETURN(int status, wait_exit(call.channel.get(), deadline));
  if (!sent) return fail(sent.error().with_context("sandbox handler: send request"));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return fail("sandbox handler: worker ended with wait status " + std::to_string(status));
  return response;
}

Result<UniqueFd> LinuxSession::create_file(const std::string& sandbox_path) {
  MOAT_ASSIGN_OR_RETURN(CallFds call, start(call_of(WorkerKind::kCreateFile, sandbox_path)));
  std::int32_t err = 0;
  UniqueFd fd;
  std::size_t nfds = 0;
  auto got = sys::recv_with_fds(call.io.get(), &err, sizeof err, &fd, 1, &nfds);
  auto status = wait_exit(call.channel.get(), Clock::now() + std::chrono::seconds(30));
  if (!got) return fail(got.error());
  if (*got != sizeof err) return fail("create_file: worker ended without an answer");
  if (err != 0 || nfds != 1) return fail(Error::from_errno("create_file", err, sandbox_path));
  (void)status;
  return fd;
}

}  // namespace moat::sandbox
