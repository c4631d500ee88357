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
#include <boost/process/env.hpp>
#include <boost/process/environment.hpp>
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

// The last non-empty line of a program's stderr: what an error message quotes.
std::string last_line(const std::string& text) {
  std::istringstream in(text);
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
    bp::environment env = boost::this_process::environment();
    for (const auto& [name, value] : s.env) env[name] = value;
    std::unique_ptr<bp::child> c;
    if (s.stderr_path.empty())
      c = std::make_unique<bp::child>(bp::exe = program_path(s.argv[0]), bp::args = args,
                                      bp::std_in<bp::null, (bp::std_out & bp::std_err)> out, env,
                                      die_with_parent);
    else
      c = std::make_unique<bp::child>(bp::exe = program_path(s.argv[0]), bp::args = args,
                                      bp::std_in<bp::null, bp::std_out> out,
                                      bp::std_err > s.stderr_path, env, die_with_parent);
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

Result<std::string> process_output(const std::vector<std::string>& argv,
                                   const std::vector<std::pair<std::string, std::string>>& env) {
  // Memory files, not temporary files: nothing is left behind when the batch is killed.
  MOAT_ASSIGN_OR_RETURN(UniqueFd out, sys::memfd("moat-batch-out"));
  MOAT_ASSIGN_OR_RETURN(UniqueFd err, sys::memfd("moat-batch-err"));
  const std::string self = "/proc/self/fd/";
  MOAT_ASSIGN_OR_RETURN(Finished f, run_process({argv, self + std::to_string(out.get()),
                                                 self + std::to_string(err.get()), 0, env}));
  MOAT_ASSIGN_OR_RETURN(std::string text, sys::read_to_end(out.get()));
  MOAT_ASSIGN_OR_RETURN(std::string errors, sys::read_to_end(err.get()));
  if (!f.ok()) {
    std::string cmd;
    for (const auto& a : argv) cmd += (cmd.empty() ? "" : " ") + a;
    return fail(cmd + " failed: " + (errors.empty() ? "no message" : last_line(errors)));
  }
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

}  // namespace moat::agent::batch
