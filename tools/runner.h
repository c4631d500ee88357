// tools/runner.h: what a tool needs from where it runs (moatd adapts the sandbox session
// to this), so tools/ includes nothing of the sandbox and tests can run tools on a fake.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "base/stop_flags.h"
#include "base/unique_fd.h"

namespace moat::tools {

// How one command ended, as the sandbox observed it (moatd audits these fields, not what a
// tool reports). sandbox::Session::exec returns it as it is.
struct ExecStatus {
  pid_t pid = -1;          // host-visible pid of the worker
  int exit_code = -1;      // valid when signal == 0
  int signal = 0;          // the signal that ended it, or 0
  bool timed_out = false;  // killed by the wall-clock timeout
  bool cancelled = false;  // killed because the stop flags were raised
  std::string limit;       // "wall_time", "cpu", "file_size", "output", ... or empty
  std::uint64_t output_bytes = 0;
  std::chrono::milliseconds duration{0};
};

class SandboxRunner {
 public:
  virtual ~SandboxRunner() = default;
  // Runs argv in a fresh sandboxed worker; output (stdout+stderr interleaved) streams to
  // on_output. timeout_s == 0 means the session's default. The command is killed when
  // `stop` is raised.
  virtual Result<ExecStatus> exec(const std::vector<std::string>& argv, const std::string& cwd,
                                  double timeout_s,
                                  const std::function<void(std::string_view)>& on_output,
                                  StopFlags stop) = 0;
  // Runs the tools' in-sandbox handler (handle_in_sandbox) on a request in a fresh worker.
  virtual Result<std::string> run_handler(std::string_view request) = 0;
  // Creates a file at a path of the sandbox's view and returns it for writing.
  virtual Result<UniqueFd> create_file(const std::string& sandbox_path) = 0;
};

}  // namespace moat::tools
