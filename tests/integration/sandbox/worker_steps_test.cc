// tests/integration/sandbox/worker_steps_test.cc: every step of the worker order has a test
// that fails if the step is skipped. Each test checks the effect with the step in place, then
// with SessionConfig::test_skip_step set, and asserts the effect is gone: so the assertion is
// known to depend on that step, not to pass anyway.
#include <dirent.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>

#include "sandbox/landlock.h"
#include "tests/integration/sandbox/test_util.h"

namespace moat::sandbox {
namespace {

using testing::TempDir;

struct Both {
  std::string with, without;
};

// Runs the same command in a normal session and in one that skips `step`.
Both run_both_argv(const std::string& step, const std::vector<std::string>& argv,
                   SessionConfig base = {}) {
  TempDir ws;
  base.workspace = ws.path();
  Both out;
  for (bool skip : {false, true}) {
    SessionConfig c = base;
    if (skip) c.test_skip_step = step;
    auto s = Session::create(c);
    if (!s) return {"session: " + s.error().message(), "session: " + s.error().message()};
    auto r = testing::run(**s, argv);
    (skip ? out.without : out.with) = r ? r->output : "error: " + r.error().message();
  }
  return out;
}

Both run_both(const std::string& step, const std::string& script, SessionConfig base = {}) {
  return run_both_argv(step, {"/bin/sh", "-c", script}, base);
}

#define MOAT_SKIP_WITHOUT_SESSIONS()                                                \
  do {                                                                              \
    TempDir probe_ws;                                                               \
    SessionConfig probe_c;                                                          \
    probe_c.workspace = probe_ws.path();                                            \
    auto probe_s = Session::create(probe_c);                                        \
    if (!probe_s) GTEST_SKIP() << "no sandbox here: " << probe_s.error().message(); \
  } while (0)

TEST(WorkerSteps, SignalsStepUnblocksSigchld) {
  MOAT_SKIP_WITHOUT_SESSIONS();
  // Not through sh: dash clears its signal mask at startup and would hide the leak.
  auto r = run_both_argv("signals", {"grep", "SigBlk", "/proc/self/status"});
  EXPECT_EQ(r.with, "SigBlk:\t0000000000000000\n");
  EXPECT_NE(r.without, r.with);  // the init's blocked SIGCHLD leaks into the code
}

TEST(WorkerSteps, SetsidStepMakesTheWorkerASessionLeader) {
  MOAT_SKIP_WITHOUT_SESSIONS();
  // Field 6 of /proc/PID/stat is the session id; the worker (the shell) leads its own.
  auto r = run_both("setsid", "set -- $(cat /proc/$$/stat); [ \"$6\" = \"$$\" ] && echo leader");
  EXPECT_EQ(r.with, "leader\n");
  EXPECT_EQ(r.without, "");
}

TEST(WorkerSteps, RlimitsStepAppliesTheLimits) {
  MOAT_SKIP_WITHOUT_SESSIONS();
  SessionConfig c;
  c.limits.open_files = 77;
  auto r = run_both("rlimits", "ulimit -n", c);
  EXPECT_EQ(r.with, "77\n");
  EXPECT_NE(r.without, "77\n");
}

TEST(WorkerSteps, CapsStepLeavesNoCapabilityInAnySet) {
  MOAT_SKIP_WITHOUT_SESSIONS();
  auto r = run_both("caps", "grep -E '^Cap(Inh|Prm|Eff|Bnd|Amb)' /proc/self/status | sort");
  EXPECT_EQ(r.with,
            "CapAmb:\t0000000000000000\nCapBnd:\t0000000000000000\nCapEff:\t0000000000000000\n"
            "CapInh:\t0000000000000000\nCapPrm:\t0000000000000000\n");
  EXPECT_NE(r.without, r.with);
}

TEST(WorkerSteps, NoNewPrivsStepIsSetAndLaterStepsNeedIt) {
  MOAT_SKIP_WITHOUT_SESSIONS();
  auto r = run_both("no_new_privs", "grep NoNewPrivs /proc/self/status");
  EXPECT_EQ(r.with, "NoNewPrivs:\t1\n");
  // Without it and without capabilities, Landlock refuses (EPERM) and the call fails closed.
  EXPECT_EQ(r.without, "error: worker step landlock: Operation not permitted");
}

TEST(WorkerSteps, LandlockStepScopesSignals) {
  MOAT_SKIP_WITHOUT_SESSIONS();
  // The init is outside the worker's Landlock domain: signal scoping (ABI 6) forbids it.
  auto r = run_both("landlock", "kill -0 1 2>/dev/null && echo reached || echo refused");
  EXPECT_EQ(r.with, "refused\n");
  EXPECT_EQ(r.without, "reached\n");
}

// Landlock scoping (ABI 6) of abstract unix sockets: each worker is a Landlock domain of its
// own, so a worker cannot connect to an abstract socket another worker listens on, though both
// share the session's network namespace.
std::string connect_to_other_workers_socket(const std::string& skip) {
  TempDir ws;
  testing::install_probe(ws);
  SessionConfig c;
  c.workspace = ws.path();
  c.test_skip_step = skip;
  auto made = Session::create(c);
  if (!made) return "session: " + made.error().message();
  Session& s = **made;
  std::mutex mu;
  std::condition_variable cv;
  std::string listener_out;
  bool listening_or_ended = false;
  std::atomic<bool> stop{false};
  std::thread listener([&] {
    ExecSpec spec;
    spec.argv = {ws.file("moat_probe"), "abstract-listen", "moat-scope-test"};
    spec.timeout_s = 60;  // a guard against a hang only: the call is cancelled below
    auto r = s.exec(
        spec,
        [&](std::string_view chunk) {
          std::lock_guard<std::mutex> lock(mu);
          listener_out.append(chunk);
          listening_or_ended = listener_out.find("listening") != std::string::npos;
          cv.notify_all();
        },
        &stop);
    std::lock_guard<std::mutex> lock(mu);
    if (!r) listener_out += " " + r.error().message();
    listening_or_ended = true;
    cv.notify_all();
  });
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return listening_or_ended; });
  }
  std::string out = testing::probe(s, ws, {"abstract", "moat-scope-test"});
  stop = true;
  listener.join();
  return listener_out.rfind("listening", 0) == 0 ? out : "listener: " + listener_out;
}

TEST(WorkerSteps, LandlockStepScopesAbstractUnixSockets) {
  MOAT_SKIP_WITHOUT_SESSIONS();
  if (landlock_abi() < 6) GTEST_SKIP() << "Landlock ABI " << landlock_abi() << " has no scoping";
  EXPECT_EQ(connect_to_other_workers_socket(""), "EPERM");
  EXPECT_EQ(connect_to_other_workers_socket("landlock"), "ok");
}

TEST(WorkerSteps, ChdirStepStartsInTheWorkspace) {
  MOAT_SKIP_WITHOUT_SESSIONS();
  TempDir ws;
  auto r = run_both("chdir", "pwd");
  EXPECT_NE(r.with, "/\n");
  EXPECT_EQ(r.with.front(), '/');
  EXPECT_EQ(r.without, "/\n");
}

// The exec watch is a filter of its own (exec_watch step), so the session's filter is the
// second one.
TEST(WorkerSteps, SeccompStepInstallsTheFilter) {
  MOAT_SKIP_WITHOUT_SESSIONS();
  auto r = run_both("seccomp", "grep '^Seccomp_filters:' /proc/self/status");
  EXPECT_EQ(r.with, "Seccomp_filters:\t2\n");
  EXPECT_EQ(r.without, "Seccomp_filters:\t1\n");
}

TEST(WorkerSteps, ExecWatchStepInstallsItsOwnFilter) {
  MOAT_SKIP_WITHOUT_SESSIONS();
  auto r = run_both("exec_watch", "grep '^Seccomp_filters:' /proc/self/status");
  EXPECT_EQ(r.with, "Seccomp_filters:\t2\n");
  EXPECT_EQ(r.without, "Seccomp_filters:\t1\n");
}

// close_fds is seen from a handler (no exec: close-on-exec would hide a leak from a command).
std::string list_fds(std::string_view) {
  std::string out;
  DIR* d = opendir("/proc/self/fd");
  if (d == nullptr) return "opendir failed";
  int self = dirfd(d);
  while (dirent* e = readdir(d))
    if (e->d_name[0] != '.' && std::atoi(e->d_name) != self) out += std::string(e->d_name) + " ";
  closedir(d);
  return out;
}

TEST(WorkerSteps, CloseFdsStepLeavesOnlyTheCallsFds) {
  MOAT_SKIP_WITHOUT_SESSIONS();
  TempDir ws;
  std::string with, without;
  for (bool skip : {false, true}) {
    SessionConfig c;
    c.workspace = ws.path();
    c.handler = list_fds;
    if (skip) c.test_skip_step = "close_fds";
    auto s = Session::create(c);
    ASSERT_TRUE(s) << s.error().message();
    auto r = (*s)->run_handler("");
    ASSERT_TRUE(r) << r.error().message();
    (skip ? without : with) = *r;
  }
  EXPECT_EQ(with, "0 1 2 4 ");  // stdin, stdout, stderr (/dev/null) and the request socket
  EXPECT_NE(without, with);     // the init's signalfd, ruleset and control sockets leak
}

TEST(WorkerSteps, FailingStepIsNamedInTheError) {
  MOAT_SKIP_WITHOUT_SESSIONS();
  TempDir ws;
  SessionConfig c;
  c.workspace = ws.path();
  MOAT_SESSION_OR_SKIP(s, c);
  ExecSpec spec;
  spec.argv = {"true"};
  spec.cwd = "/no/such/dir";
  auto r = s.exec(spec, nullptr, nullptr);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message(), "worker step chdir: No such file or directory");
}

}  // namespace
}  // namespace moat::sandbox
