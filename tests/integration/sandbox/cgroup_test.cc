// tests/integration/sandbox/cgroup_test.cc: a session's cgroup attach made right after
// warm_cgroup_attach() (sandbox/cgroup.h) waits no RCU grace period, where one made after the
// kernel's lock went idle waits one. moatd starts the warm-up as it starts, so a private
// session's attach (on its critical path) finds the grace period over or under way.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "sandbox/cgroup.h"
#include "sandbox/session_config.h"

namespace moat::sandbox {
namespace {

using namespace std::chrono_literals;

// How long no cgroup attach is made before one is timed: the kernel's rcu_sync returns to idle
// a grace period or two after the last writer (about 20 ms measured on the CI VM), so the next
// attach waits a whole grace period again.
constexpr auto kIdle = 150ms;
// A first attach shorter than this did not wait a grace period (another process's attach kept
// the lock warm meanwhile): nothing to compare with.
constexpr double kColdAtLeastMs = 3.0;

// A child that blocks on a pipe until the test is done with it, then is killed and reaped.
struct WaitingChild {
  pid_t pid = -1;
  int fds[2] = {-1, -1};
  WaitingChild() {
    if (::pipe(fds) != 0) return;
    pid = ::fork();
    if (pid == 0) {
      char c;
      (void)!::read(fds[0], &c, 1);
      ::_exit(0);
    }
  }
  void end() {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
    pid = -1;
  }
  ~WaitingChild() {
    end();
    ::close(fds[0]);
    ::close(fds[1]);
  }
};

// What is done between the idle time and the attach.
enum class Before { kNothing, kWarmup, kWarmupThreadThenAHello };

// How long a private moatd's hello may take after its start before its session's attach: a
// loaded host's, more than the kernel's lock stays warm after one write (about 20 ms).
constexpr auto kSlowHello = 60ms;

// Milliseconds the attach of a fresh child to a fresh session cgroup takes after kIdle without
// one and `before`; -1 when no cgroup could be made.
double timed_attach(Before before) {
  WaitingChild child;
  if (child.pid <= 0) return -1;
  auto cg = ScopedCgroup::create("moat-" + std::to_string(child.pid), Limits{}, UserCgroup{});
  if (!cg || !cg->active()) return -1;
  std::this_thread::sleep_for(kIdle);
  if (before == Before::kWarmup) {
    EXPECT_TRUE(warm_cgroup_attach()) << "the warm-up's write of its own cgroup failed";
  } else if (before == Before::kWarmupThreadThenAHello) {
    start_attach_warmup();
    std::this_thread::sleep_for(kSlowHello);
  }
  const auto t0 = std::chrono::steady_clock::now();
  auto attached = cg->attach(child.pid);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_TRUE(attached) << attached.error().message();
  child.end();  // before the cgroup is removed: rmdir refuses one with a process
  return ms;
}

// An attach after kIdle, retried until one waited a grace period; skips the test when none did.
#define MOAT_COLD_ATTACH_OR_SKIP(cold)                                                        \
  if (::access("/sys/fs/cgroup/pids", W_OK) != 0)                                            \
    GTEST_SKIP() << "no writable cgroup v1 pids hierarchy (rootless, or cgroup v2 only)";    \
  double cold = -1;                                                                          \
  for (int i = 0; i < 5 && cold < kColdAtLeastMs; ++i) cold = timed_attach(Before::kNothing); \
  if (cold < 0) GTEST_SKIP() << "no session cgroup: " << ScopedCgroup::unavailable_reason(); \
  if (cold < kColdAtLeastMs)                                                                 \
  GTEST_SKIP() << "every attach after " << kIdle.count() << " ms idle took under "           \
               << kColdAtLeastMs << " ms (" << cold                                          \
               << "): other processes' attaches kept the kernel's lock warm"

TEST(CgroupWarmup, AnAttachRightAfterTheWarmupWaitsNoGracePeriod) {
  MOAT_COLD_ATTACH_OR_SKIP(cold);
  const double warm =
      std::min(timed_attach(Before::kWarmup), timed_attach(Before::kWarmup));
  EXPECT_LT(warm, cold / 2) << "an attach right after the warm-up took " << warm
                            << " ms, one after " << kIdle.count() << " ms idle " << cold << " ms";
}

// moatd's warm-up thread keeps the lock warm until the session's attach, however long its
// hello took (within kAttachWarmFor): one write alone would have gone cold again by then.
TEST(CgroupWarmup, TheWarmupThreadKeepsItWarmUntilASlowHellosAttach) {
  MOAT_COLD_ATTACH_OR_SKIP(cold);
  const double warm = std::min(timed_attach(Before::kWarmupThreadThenAHello),
                               timed_attach(Before::kWarmupThreadThenAHello));
  EXPECT_LT(warm, cold / 2) << "an attach " << kSlowHello.count()
                            << " ms after the warm-up started took " << warm << " ms, one after "
                            << kIdle.count() << " ms idle " << cold << " ms";
}

}  // namespace
}  // namespace moat::sandbox
