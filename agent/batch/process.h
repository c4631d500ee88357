// agent/batch/process.h: the processes a batch item starts outside the sandbox (git, `moat
// run`, `moat sandbox exec`), with their output in files and a wall-time limit.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "base/result.h"

namespace moat::agent::batch {

struct Spawn {
  std::vector<std::string> argv;  // argv[0] is looked up in PATH when it has no '/'
  std::string stdout_path;        // truncated; "" = /dev/null
  std::string stderr_path;        // appended; "" = the same file as stdout
  double timeout_s = 0;           // 0 = none; past it the process is killed (SIGKILL)
  std::vector<std::pair<std::string, std::string>> env;  // set over this process's environment
};

struct Finished {
  int exit_code = -1;  // -1 when killed by a signal
  int signal = 0;
  bool timed_out = false;
  double seconds = 0;
  bool ok() const { return exit_code == 0; }
};

// Runs `s` to its end. The child gets stdin from /dev/null and dies with this process
// (PR_SET_PDEATHSIG), so a batch killed with SIGKILL leaves no item running behind it.
Result<Finished> run_process(const Spawn& s);

// Runs argv and returns its stdout (trailing newline removed); an error when it exits non-zero,
// naming the command and its stderr's last line.
Result<std::string> process_output(
    const std::vector<std::string>& argv,
    const std::vector<std::pair<std::string, std::string>>& env = {});

}  // namespace moat::agent::batch
