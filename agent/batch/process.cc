// agent/batch/process.cc: child processes of a batch item, over Boost.Process, waited for on a
// pidfd so a wall-time limit needs no SIGCHLD handling (other threads run items too).
#include "agent/batch/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <boost/process/args.hpp>
#include <boost/process/child.hpp>
#include <boost/process/exe.hpp>
#include <boost/process/extend.hpp>
#include <boost/process/io.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "base/sys.h"

namespace moat::agent::batch {
namespace {

namespace bp = boost::process;
using Clock = std::chrono::steady_clock;

// The first executable `name` on $PATH (git is the only program run by name).
std::string program_path(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* env = std::getenv("PATH");
  std::string path = env != nullptr && *env != '\0' ? env : "/usr/local/bin:/usr/bin:/bin";
  for (std::size_t start = 0, end; start <= path.size(); start = end + 1) {
    end = path.find(':', start);
    if (end == std::string::npos) end = path.size();
    const std::string candidate = path.substr(start, end - start) + "/" + name;
    if (end > start && ::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return name;
}

// Waits for the child's pidfd up to `timeout_s` (0 = forever); false when the time ran out.
bool wait_readable(int pidfd, double timeout_s) {
  const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s);
  for (;;) {
    int ms = -1;
    if (timeout_s > 0) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      if (left.count() <= 0) return false;
      ms = static_cast<int>(left.count());
    }
    pollfd p{pidfd, POLLIN, 0};
    const int n = ::poll(&p, 1, ms);
    if (n > 0) return true;
    if (n < 0 && errno != EINTR) return true;  // wait() below tells what happened
  }
}

std::string stderr_tail(const std::string& path) {
  std::ifstream in(path);
  std::string line, last;
  while (std::getline(in, line))
    if (!line.empty()) last = line;
  return last;
}

}  // namespace

Result<Finished> run_process(const Spawn& s) {
  const auto start = Clock::now();
  const std::string out = s.stdout_path.empty() ? "/dev/null" : s.stdout_path;
  const std::vector<std::string> args(s.argv.begin() + 1, s.argv.end());
  // The child dies with the thread that started it: the item's worker thread waits for it
  // below, so the two end together, and a batch killed with SIGKILL leaves no item behind.
  auto die_with_parent =
      bp::extend::on_exec_setup = [](auto&) { (void)::prctl(PR_SET_PDEATHSIG, SIGKILL); };
  Finished f;
  try {
    std::unique_ptr<bp::child> c;
    if (s.stderr_path.empty())
      c = std::make_unique<bp::child>(bp::exe = program_path(s.argv[0]), bp::args = args,
                                      bp::std_in<bp::null, (bp::std_out & bp::std_err)> out,
                                      die_with_parent);
    else
      c = std::make_unique<bp::child>(bp::exe = program_path(s.argv[0]), bp::args = args,
                                      bp::std_in<bp::null, bp::std_out> out,
                                      bp::std_err > s.stderr_path, die_with_parent);
    auto pidfd = sys::pidfd_open(c->id());
    if (pidfd && !wait_readable(pidfd->get(), s.timeout_s)) {
      f.timed_out = true;
      c->terminate();  // SIGKILL
    }
    c->wait();
    const int native = c->native_exit_code();
    if (WIFSIGNALED(native)) f.signal = WTERMSIG(native);
    else f.exit_code = WEXITSTATUS(native);
  } catch (const std::exception& e) {
    return fail("starting " + s.argv[0] + ": " + e.what());
  }
  f.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return f;
}

Result<std::string> process_output(const std::vector<std::string>& argv) {
  char out_tmp[] = "/tmp/moat-batch-out.XXXXXX";
  char err_tmp[] = "/tmp/moat-batch-err.XXXXXX";
  UniqueFd o(::mkostemp(out_tmp, O_CLOEXEC)), e(::mkostemp(err_tmp, O_CLOEXEC));
  if (!o.valid() || !e.valid()) return fail(Error::from_errno("mkstemp", errno, "/tmp"));
  auto f = run_process({argv, out_tmp, err_tmp, 0});
  auto text = sys::read_to_end(o.get());
  const std::string why = stderr_tail(err_tmp);
  ::unlink(out_tmp);
  ::unlink(err_tmp);
  MOAT_TRY(f);
  std::string cmd;
  for (const auto& a : argv) cmd += (cmd.empty() ? "" : " ") + a;
  if (!f->ok()) return fail(cmd + " failed: " + (why.empty() ? "no message" : why));
  if (!text) return fail(text.error());
  std::string s = std::move(*text);
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

}  // namespace moat::agent::batch
