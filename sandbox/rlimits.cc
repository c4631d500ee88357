// sandbox/rlimits.cc: the worker's resource limits (see rlimits.h).
#include "sandbox/rlimits.h"

#include <cerrno>

#include "base/sanitizers.h"

namespace moat::sandbox {
namespace {

constexpr rlim_t kSessionSigpending = 1024;
constexpr rlim_t kSessionMsgqueueBytes = 256 * 1024;

void add(RlimitPlan& plan, int resource, rlim_t value) {
  plan.entries[static_cast<std::size_t>(plan.count++)] = {resource, value};
}

// 0 is "not set" on both sides.
std::uint64_t smaller(std::uint64_t session, std::uint64_t call) {
  if (call == 0) return session;
  return session == 0 || call < session ? call : session;
}

}  // namespace

Limits narrowed(Limits session, const CallLimits& call) {
  session.cpu_time_s = smaller(session.cpu_time_s, call.cpu_time_s);
  session.memory_bytes = smaller(session.memory_bytes, call.memory_bytes);
  session.pids = smaller(session.pids, call.pids);
  session.file_size = smaller(session.file_size, call.file_size);
  session.open_files = smaller(session.open_files, call.open_files);
  return session;
}

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
  // Pending signals and POSIX message queue bytes are counted per user and charged up the
  // user namespaces to the session namespace's owner on the host (ucounts): these bound what
  // one session takes from that owner's total (the Linux defaults are about 63k and 800 KiB).
  add(plan, RLIMIT_SIGPENDING, kSessionSigpending);
  add(plan, RLIMIT_MSGQUEUE, kSessionMsgqueueBytes);
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
