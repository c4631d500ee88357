// sandbox/exec_budget.h: what one call's exec watch may cost moatd. The watch reads each exec's
// argv and environment on moatd's CPU, outside the sandbox's own limits: 1500 failing execve
// with a 30,000-word argv cost the sandbox 0.02 s and moatd 4.5 s (issue 26 item 7). A token
// bucket bounds the rate of exec checks and of bytes read (the watch waits, and so does the
// caller, in its execve), and moatd's CPU time on the watch's thread counts against the call's
// own CPU limit: past it the call is ended, saying why.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace moat::sandbox {

// Far above what a build does (make -j2 of a C project: about 300 execs a second here; an exec
// of a shell loop costs about 400 us in all) and its argv (a long link line: 100 KiB).
constexpr double kExecChecksPerSecond = 2000;
constexpr double kExecBytesPerSecond = 64.0 * (1 << 20);
// A second's worth may come at once.
constexpr double kExecBurstSeconds = 1.0;

class ExecBudget {
 public:
  // `cpu_s`: the call's CPU limit (resources.cpu_time), which moatd's CPU on its watch may not
  // pass either; 0: none.
  explicit ExecBudget(double cpu_s);

  // How long the watch waits before its next check: zero while the bucket holds one.
  std::chrono::milliseconds wait_before_check();
  // One check made, `bytes` read from the caller's memory.
  void charge(std::size_t bytes);
  // True once the watch's thread has used more CPU than the call may (it must be called on
  // that thread); why() says so.
  bool over();
  const std::string& why() const { return why_; }

 private:
  void refill();

  double cpu_s_;
  double checks_, bytes_;
  std::chrono::steady_clock::time_point last_;
  std::string why_;
};

}  // namespace moat::sandbox
