// sandbox/rlimits.cc: the worker's resource limits (see rlimits.h).
#include "sandbox/rlimits.h"

#include <cerrno>

#include "base/sanitizers.h"
#include "sandbox/session.h"

namespace moat::sandbox {
namespace {

void add(RlimitPlan& plan, int resource, rlim_t value) {
  plan.entries[static_cast<std::size_t>(plan.count++)] = {resource, value};
}

}  // namespace

RlimitPlan plan_rlimits(const Limits& limits) {
  RlimitPlan plan;
  if (limits.cpu_time_s) add(plan, RLIMIT_CPU, limits.cpu_time_s);
  // ASan reserves terabytes of shadow memory at start, so under any RLIMIT_AS its allocator
  // fails at once: sanitizer builds leave the memory bound to the cgroup (when there is one).
  if (limits.memory_bytes && !kAddressSanitizer) add(plan, RLIMIT_AS, limits.memory_bytes);
  if (limits.file_size) add(plan, RLIMIT_FSIZE, limits.file_size);
  if (limits.open_files) add(plan, RLIMIT_NOFILE, limits.open_files);
  // RLIMIT_NPROC counts per user namespace and uid (ucounts): the session's uid 0 is a
  // non-root host uid without CAP_SYS_RESOURCE, so the limit holds and a fork bomb stops.
  if (limits.pids) add(plan, RLIMIT_NPROC, limits.pids);
  add(plan, RLIMIT_CORE, 0);  // a core dump could fill the workspace with memory contents
  return plan;
}

int apply_rlimits_in_child(const RlimitPlan& plan) {
  for (int i = 0; i < plan.count; ++i) {
    const auto& e = plan.entries[static_cast<std::size_t>(i)];
    rlimit value{e.value, e.value};
    if (setrlimit(static_cast<__rlimit_resource>(e.resource), &value) != 0) return errno;
  }
  return 0;
}

}  // namespace moat::sandbox
