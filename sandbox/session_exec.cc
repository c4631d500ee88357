// sandbox/session_exec.cc: a session's exec call on moatd's side (see session_linux.h): the
// loop that forwards the command's output and ends the call at its exit, its deadline, a
// cancel (at once when its StopFlags carry a wake fd), the output ceiling or the exec watch's
// CPU budget.
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "base/ticks.h"
#include "sandbox/exec_watch.h"
#include "sandbox/session_linux.h"

namespace moat::sandbox {
namespace {

using Clock = SessionClock;

// What a killed call's pipe may still hold is read until it is quiet this long: EOF follows at
// once unless a process escaped the group with setsid, which the call does not wait for.
constexpr int kDrainQuietMs = 100;

const char* limit_for_signal(int sig) {
  if (sig == SIGXCPU) return "cpu";
  if (sig == SIGXFSZ) return "file_size";
  return "";
}

CallRequest exec_request(const ExecSpec& spec) {
  CallRequest r;
  r.kind = WorkerKind::kExec;
  r.argv = spec.argv;
  r.cwd = spec.cwd;
  r.env = spec.env;
  r.terminal = spec.stdio[0] >= 0 && spec.terminal;
  r.limits = spec.limits;
  return r;
}

// Counts a call's output against the session's ceiling and passes on what is under it.
struct OutputSink {
  std::uint64_t ceiling;  // 0: none
  const std::function<void(std::string_view)>& forward;
  tools::ExecStatus& out;

  // False when this chunk passed the ceiling: it is not passed on, and out.limit says so.
  bool take(const char* data, ssize_t n) {
    out.output_bytes += static_cast<std::uint64_t>(n);
    if (ceiling && out.output_bytes > ceiling) {
      if (out.limit.empty()) out.limit = "output";
      return false;
    }
    if (forward) forward(std::string_view(data, static_cast<std::size_t>(n)));
    return true;
  }
};

// Drains what the pipe still holds once the call's group is gone (kDrainQuietMs).
void drain_output(int io, OutputSink& sink) {
  char buf[65536];
  for (;;) {
    pollfd p{io, POLLIN, 0};
    if (poll(&p, 1, kDrainQuietMs) <= 0) return;
    ssize_t n = ::read(io, buf, sizeof buf);
    if (n <= 0 || !sink.take(buf, n)) return;
  }
}

void record_wait_status(int wait_status, tools::ExecStatus& out) {
  if (WIFEXITED(wait_status)) out.exit_code = WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) {
    out.signal = WTERMSIG(wait_status);
    if (out.limit.empty()) out.limit = limit_for_signal(out.signal);
  }
}

// A requested timeout only shortens the session's wall time, never extends it.
double call_timeout(double requested, double wall) {
  return requested > 0 && (wall <= 0 || requested < wall) ? requested : wall;
}

// The poll's timeout: the tick (base/ticks.h), or less when the deadline comes first.
int poll_timeout(Clock::time_point deadline, bool killed) {
  auto wait = ticks::kExecCall;
  if (!killed)
    wait = std::min(wait, std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()));
  return static_cast<int>(std::max<long long>(0, wait.count()));
}

}  // namespace

Result<tools::ExecStatus> LinuxSession::exec(const ExecSpec& spec,
                                             const std::function<void(std::string_view)>& on_output,
                                             StopFlags stop) {
  tools::ExecStatus out;
  const auto t0 = Clock::now();
  const bool passed = spec.stdio[0] >= 0;
  const Limits& limits = parts_.config.limits;
  std::unique_ptr<ExecWatch> watch;
  MOAT_ASSIGN_OR_RETURN(CallFds call, start(exec_request(spec), &watch, &spec));
  out.pid = call.host_pid;
  const double timeout = spec.for_session ? 0 : call_timeout(spec.timeout_s, limits.wall_time_s);
  const auto deadline = t0 + std::chrono::duration_cast<Clock::duration>(
                                 std::chrono::duration<double>(timeout > 0 ? timeout : 1e9));
  bool killed = false, out_open = !passed;
  auto kill_call = [&] {
    char k = kKillRequest;
    if (!killed) (void)::send(call.channel.get(), &k, 1, MSG_NOSIGNAL);
    killed = true;
  };
  OutputSink sink{limits.output_bytes, on_output, out};
  int wait_status = -1;
  char buf[65536];
  while (wait_status < 0) {
    // The stop's wake is left out once the call is killed: it stays readable.
    pollfd fds[3] = {{call.channel.get(), POLLIN, 0},
                     {out_open ? call.io.get() : -1, POLLIN, 0},
                     {killed ? -1 : stop.wake_fd(), POLLIN, 0}};
    int rc = poll(fds, 3, poll_timeout(deadline, killed));
    if (rc < 0 && errno != EINTR) return fail(Error::from_errno("poll", errno));
    if (fds[1].revents) {
      ssize_t n = ::read(call.io.get(), buf, sizeof buf);
      if (n <= 0) out_open = false;
      else if (!sink.take(buf, n)) kill_call();
    }
    if (fds[0].revents) {
      ChannelRecord rec{};
      MOAT_ASSIGN_OR_RETURN(bool got, sys::read_exact(call.channel.get(), &rec, sizeof rec, true));
      if (!got) {
        if (session_seconds_left() > 0) return fail("session init died during the call");
        out.limit = "session_wall_time";
        out.signal = SIGKILL;
        break;
      }
      if (rec.type == ChannelMsg::kExited) wait_status = rec.value;
    }
    if (!killed && Clock::now() >= deadline) {
      out.timed_out = true;
      // The call's own timeout when it was below the policy's ceiling, else that ceiling
      // (a timeout at or above it is the ceiling's: call_timeout).
      const double wall = limits.wall_time_s;
      const bool own = spec.timeout_s > 0 && (wall <= 0 || spec.timeout_s < wall);
      if (out.limit.empty()) out.limit = own ? "timeout" : "wall_time";
      kill_call();
    }
    if (!killed && stop.raised()) {
      out.cancelled = true;
      kill_call();
    }
    // moatd's own CPU checking the call's execs counts against the call (exec_budget.h).
    if (!killed && watch) {
      if (std::string why = watch->over_budget(); !why.empty()) {
        out.limit = "exec_watch_cpu";
        kill_call();
      }
    }
  }
  if (wait_status >= 0) {
    if (out_open) drain_output(call.io.get(), sink);
    record_wait_status(wait_status, out);
  }
  // The init killed what the call left behind; their ends are recorded before the call's.
  if (watch) watch->finish(std::chrono::seconds(2));
  out.duration = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0);
  return out;
}

}  // namespace moat::sandbox
