// sandbox/exec_budget.cc: see exec_budget.h.
#include "sandbox/exec_budget.h"

#include <time.h>

#include <algorithm>
#include <cstdio>

namespace moat::sandbox {
namespace {

double thread_cpu_seconds() {
  timespec ts{};
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return 0;
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

}  // namespace

ExecBudget::ExecBudget(double cpu_s)
    : cpu_s_(cpu_s),
      checks_(kExecChecksPerSecond * kExecBurstSeconds),
      bytes_(kExecBytesPerSecond * kExecBurstSeconds),
      last_(std::chrono::steady_clock::now()) {}

void ExecBudget::refill() {
  const auto now = std::chrono::steady_clock::now();
  const double s = std::chrono::duration<double>(now - last_).count();
  last_ = now;
  checks_ = std::min(checks_ + s * kExecChecksPerSecond, kExecChecksPerSecond * kExecBurstSeconds);
  bytes_ = std::min(bytes_ + s * kExecBytesPerSecond, kExecBytesPerSecond * kExecBurstSeconds);
}

std::chrono::milliseconds ExecBudget::wait_before_check() {
  refill();
  // Bytes are charged after the read (their count is known only then): a debt is paid first.
  const double wait_s = std::max({0.0, (1 - checks_) / kExecChecksPerSecond,
                                  -bytes_ / kExecBytesPerSecond});
  return std::chrono::milliseconds(static_cast<long>(wait_s * 1000 + (wait_s > 0 ? 1 : 0)));
}

void ExecBudget::charge(std::size_t bytes) {
  refill();
  checks_ -= 1;
  bytes_ -= static_cast<double>(bytes);
}

bool ExecBudget::over() {
  if (!why_.empty()) return true;
  if (cpu_s_ <= 0) return false;
  const double used = thread_cpu_seconds();
  if (used <= cpu_s_) return false;
  char text[200];
  std::snprintf(text, sizeof text,
                "moatd spent %.2f s of CPU checking this call's execs, more than the call's "
                "cpu_time of %g s",
                used, cpu_s_);
  why_ = text;
  return true;
}

}  // namespace moat::sandbox
