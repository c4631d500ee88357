// tests/unit/tools/local_runner.cc: fork/exec with a process-group kill on timeout/cancel.
#include "tests/unit/tools/local_runner.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>

#include "tools/registry.h"

namespace moat::tools::testing {
namespace {

// In the child: raw syscalls only, then exec; 127 says the exec failed.
[[noreturn]] void run_child(char* const* argv, const char* cwd, int out_fd) {
  ::setpgid(0, 0);
  const int devnull = ::open("/dev/null", O_RDONLY);
  if (devnull < 0 || ::dup2(devnull, 0) < 0 || ::dup2(out_fd, 1) < 0 || ::dup2(out_fd, 2) < 0)
    ::_exit(126);
  if (cwd[0] != '\0' && ::chdir(cwd) != 0) ::_exit(126);
  ::execvp(argv[0], argv);
  ::_exit(127);
}

}  // namespace

Result<ExecStatus> LocalRunner::exec(const std::vector<std::string>& argv, const std::string& cwd,
                                     double timeout_s,
                                     const std::function<void(std::string_view)>& on_output,
                                     StopFlags stop) {
  std::vector<char*> cargv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return fail(Error::from_errno("pipe2", errno));
  UniqueFd rd(fds[0]), wr(fds[1]);
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = ::fork();
  if (pid < 0) return fail(Error::from_errno("fork", errno));
  if (pid == 0) run_child(cargv.data(), cwd.c_str(), wr.get());
  ::setpgid(pid, pid);  // also in the parent: the kill below must never miss the group
  wr.reset();
  ExecStatus st;
  st.pid = pid;
  const auto deadline = start + std::chrono::duration<double>(timeout_s > 0 ? timeout_s : 600);
  bool killed = false;
  std::chrono::steady_clock::time_point killed_at;
  char buf[65536];
  for (;;) {
    const auto now = std::chrono::steady_clock::now();
    if (!killed && (now >= deadline || stop.raised())) {
      st.timed_out = now >= deadline;
      st.cancelled = !st.timed_out;
      ::kill(-pid, SIGKILL);
      killed = true;
      killed_at = now;
    }
    // A stray descendant outside the group may hold the pipe; stop reading a while after the kill.
    if (killed && now - killed_at > std::chrono::seconds(2)) break;
    pollfd p{rd.get(), POLLIN, 0};
    const int n = ::poll(&p, 1, 10);
    if (n < 0 && errno != EINTR) return fail(Error::from_errno("poll", errno));
    if (n <= 0) continue;
    const ssize_t got = ::read(rd.get(), buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    st.output_bytes += static_cast<std::uint64_t>(got);
    if (on_output) on_output(std::string_view(buf, static_cast<std::size_t>(got)));
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  if (WIFEXITED(status)) st.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) st.signal = WTERMSIG(status);
  st.duration = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - start);
  return st;
}

Result<std::string> LocalRunner::run_handler(std::string_view request) {
  ++handler_calls_;
  return handle_in_sandbox(request);
}

Result<UniqueFd> LocalRunner::create_file(const std::string& sandbox_path) {
  const int fd = ::open(sandbox_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return fail(Error::from_errno("open", errno, sandbox_path));
  return UniqueFd(fd);
}

}  // namespace moat::tools::testing
