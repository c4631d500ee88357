// tests/integration/sandbox/limits_test.cc: per-call and session limits, and lifetime: a
// timeout kills the group, output is bounded, a fork bomb and a disk fill stay inside, and
// moatd dying leaves nothing running.
#include <signal.h>
#include <sys/inotify.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>
#include <vector>

#include "tests/integration/sandbox/test_util.h"

namespace moat::sandbox {
namespace {

using testing::TempDir;
using Clock = std::chrono::steady_clock;

SessionConfig config_for(const TempDir& ws) {
  SessionConfig c;
  c.workspace = ws.path();
  return c;
}

bool process_exists(pid_t pid) { return kill(pid, 0) == 0 || errno == EPERM; }

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(Limits, TimeoutKillsTheWholeProcessGroup) {
  TempDir ws;
  MOAT_SESSION_OR_SKIP(s, config_for(ws));
  auto t0 = Clock::now();
  auto r = testing::sh(s, "sleep 100 & echo started; sleep 100", 0.5);
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_TRUE(r->outcome.timed_out);
  EXPECT_EQ(r->outcome.limit, "timeout");
  EXPECT_EQ(r->outcome.signal, SIGKILL);
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(5));
  auto after = testing::sh(s, "cat /proc/[0-9]*/comm | grep -c sleep");
  ASSERT_TRUE(after);
  EXPECT_EQ(after->output, "0\n") << "the background sleep outlived its call";
}

TEST(Limits, BackgroundJobsDieWithTheCall) {
  TempDir ws;
  MOAT_SESSION_OR_SKIP(s, config_for(ws));
  auto r = testing::sh(s, "sleep 100 & echo bg");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->outcome.exit_code, 0);
  auto after = testing::sh(s, "cat /proc/[0-9]*/comm | grep -c sleep");
  ASSERT_TRUE(after);
  EXPECT_EQ(after->output, "0\n");
}

TEST(Limits, OutputBeyondTheLimitKillsTheCall) {
  TempDir ws;
  SessionConfig c = config_for(ws);
  c.limits.output_bytes = 100000;
  MOAT_SESSION_OR_SKIP(s, c);
  auto r = testing::sh(s, "yes");
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->outcome.limit, "output");
  EXPECT_LE(r->output.size(), 100000u);
  EXPECT_GT(r->outcome.output_bytes, 100000u);
}

TEST(Limits, CancelKillsTheCall) {
  TempDir ws;
  MOAT_SESSION_OR_SKIP(s, config_for(ws));
  std::atomic<bool> cancel{false};
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    cancel = true;
  });
  ExecSpec spec;
  spec.argv = {"sleep", "100"};
  auto r = s.exec(spec, nullptr, &cancel);
  t.join();
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->cancelled);
  EXPECT_EQ(r->signal, SIGKILL);
}

TEST(Limits, ForkBombHitsNprocAndTheSessionSurvives) {
  TempDir ws;
  testing::install_probe(ws);
  SessionConfig c = config_for(ws);
  c.limits.pids = 64;
  MOAT_SESSION_OR_SKIP(s, c);
  std::string out = testing::probe(s, ws, {"fork-bomb"});
  EXPECT_EQ(out.rfind("fork EAGAIN after ", 0), 0u) << out;
  auto after = testing::sh(s, "echo alive");
  ASSERT_TRUE(after);
  EXPECT_EQ(after->output, "alive\n");
}

TEST(Limits, DiskFillOfTmpStopsAtTheTmpfsSize) {
  TempDir ws;
  SessionConfig c = config_for(ws);
  c.limits.tmp_size = 4 << 20;
  MOAT_SESSION_OR_SKIP(s, c);
  auto r = testing::sh(s, "dd if=/dev/zero of=/tmp/fill bs=1M count=64 2>&1; du -k /tmp/fill");
  ASSERT_TRUE(r);
  EXPECT_NE(r->output.find("No space left on device"), std::string::npos) << r->output;
}

TEST(Limits, FileSizeLimitIsReported) {
  TempDir ws;
  SessionConfig c = config_for(ws);
  c.limits.file_size = 1 << 20;
  MOAT_SESSION_OR_SKIP(s, c);
  auto r = testing::sh(s, "exec dd if=/dev/zero of=big bs=1M count=4");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->outcome.signal, SIGXFSZ);
  EXPECT_EQ(r->outcome.limit, "file_size");
}

// The default per-file limit is finite and below 1 GiB: a 1 GiB allocation, a 1 GiB sparse
// extension and a 1 GiB write each stop at RLIMIT_FSIZE.
TEST(Limits, DefaultFileSizeLimitStopsAOneGibFile) {
  TempDir ws;
  testing::install_probe(ws);
  MOAT_SESSION_OR_SKIP(s, config_for(ws));
  EXPECT_EQ(testing::probe(s, ws, {"fallocate", "0", "1073741824", ws.file("big")}), "EFBIG\n0");
  auto r = testing::sh(s,
                       "truncate -s 1G sparse; echo truncate $?; "
                       "exec dd if=/dev/zero of=sparse2 bs=1 count=1 seek=1073741823 2>/dev/null");
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->outcome.signal, SIGXFSZ) << r->output;
  EXPECT_EQ(r->outcome.limit, "file_size");
  EXPECT_EQ(std::filesystem::file_size(ws.file("sparse")), 0u) << r->output;
}

// fallocate checks RLIMIT_FSIZE only where the size grows: FALLOC_FL_KEEP_SIZE (and the other
// modes) would allocate past the limit unchecked, so any mode bit fails with EOPNOTSUPP and
// nothing is allocated; mode 0 within the limit works.
TEST(Limits, FallocateBeyondTheFileSizeLimitAllocatesNothing) {
  TempDir ws;
  testing::install_probe(ws);
  SessionConfig c = config_for(ws);
  c.limits.file_size = 1 << 20;
  MOAT_SESSION_OR_SKIP(s, c);
  const std::string f = ws.file("f");
  // KEEP_SIZE, KEEP_SIZE|PUNCH_HOLE, ZERO_RANGE, INSERT_RANGE, UNSHARE_RANGE
  for (const char* mode : {"1", "3", "0x10", "0x20", "0x40"})
    EXPECT_EQ(testing::probe(s, ws, {"fallocate", mode, "8388608", f}), "EOPNOTSUPP\n0") << mode;
  EXPECT_EQ(testing::probe(s, ws, {"fallocate", "0", "8388608", f}), "EFBIG\n0");
  EXPECT_EQ(testing::probe(s, ws, {"fallocate", "0", "65536", f}), "ok\n65536");
}

// Per-user kernel counters: inotify instances made in a sandbox are charged to its user
// namespace's owner on the host too. While a sandbox holds every instance it can get, the
// user running this test (root, or the uid of a rootless run) can still create one.
TEST(Limits, HostUserCanStillCreateAnInotifyInstanceWhileASandboxHoldsAllItCan) {
  TempDir ws;
  testing::install_probe(ws);
  MOAT_SESSION_OR_SKIP(s, config_for(ws));
  std::string held;
  std::thread sandbox([&] {
    held = testing::probe(s, ws, {"inotify-hold", ws.file("ready"), ws.file("release")});
  });
  for (int i = 0; i < 2000 && !std::filesystem::exists(ws.file("ready")); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  const int fd = inotify_init1(IN_CLOEXEC);
  const int err = errno;
  ws.write("release", "");
  sandbox.join();
  EXPECT_GE(fd, 0) << "host inotify_init1: " << strerrorname_np(err) << "; sandbox: " << held;
  if (fd >= 0) close(fd);
  EXPECT_NE(held.find("EMFILE"), std::string::npos) << held;
  auto r =
      testing::sh(s, "cat /proc/sys/user/max_inotify_instances /proc/sys/user/max_user_namespaces");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->output,
            std::to_string(std::stol(std::string(
                               std::istreambuf_iterator<char>(*std::make_unique<std::ifstream>(
                                   "/proc/sys/fs/inotify/max_user_instances")),
                               {})) /
                           4) +
                "\n0\n");
}

// A timeout asked for above the session's wall time does not extend it.
TEST(Limits, ARequestedTimeoutAboveTheWallTimeIsCapped) {
  TempDir ws;
  SessionConfig c = config_for(ws);
  c.limits.wall_time_s = 0.5;
  MOAT_SESSION_OR_SKIP(s, c);
  auto r = testing::sh(s, "sleep 30; echo overslept", 1000);
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_TRUE(r->outcome.timed_out);
  EXPECT_EQ(r->outcome.limit, "wall_time");
  EXPECT_EQ(r->output, "");
}

// A session's service (ExecSpec::for_session: an MCP server) is not capped by the wall time:
// it runs until it exits, and a raised stop ends it.
TEST(Limits, ASessionsServiceOutlivesTheWallTimeAndEndsAtItsStop) {
  TempDir ws;
  SessionConfig c = config_for(ws);
  c.limits.wall_time_s = 0.3;
  MOAT_SESSION_OR_SKIP(s, c);
  ExecSpec spec;
  spec.argv = {"/bin/sh", "-c", "sleep 0.8; echo served"};
  spec.for_session = true;
  std::string out;
  auto r = s.exec(spec, [&](std::string_view chunk) { out.append(chunk); }, nullptr);
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_FALSE(r->timed_out) << r->limit;
  EXPECT_EQ(r->exit_code, 0);
  EXPECT_EQ(out, "served\n");
  std::atomic<bool> stop{false};
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    stop = true;
  });
  spec.argv = {"/bin/sh", "-c", "sleep 30; echo overslept"};
  const auto t0 = Clock::now();
  auto stopped = s.exec(spec, nullptr, StopFlags(&stop));
  stopper.join();
  ASSERT_TRUE(stopped) << stopped.error().message();
  EXPECT_TRUE(stopped->cancelled);
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(5));
}

// A call's cancel (CallCancel::raise, as RunningCalls raises it on a cancel frame) wakes the
// exec loop at once through its eventfd: the median of five cancels of a running `sleep` ends
// well under the 50 ms tick the loop read the flag at before (median ~25 ms + the kill then).
TEST(Limits, ACancelledCallEndsAtOnceNotAtTheLoopsTick) {
  TempDir ws;
  MOAT_SESSION_OR_SKIP(s, config_for(ws));
  std::vector<double> ms;
  for (int i = 0; i < 5; ++i) {
    CallCancel cancel;
    ExecSpec spec;
    spec.argv = {"/bin/sleep", "30"};
    Clock::time_point raised;
    std::thread canceller([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(100 + 7 * i));
      raised = Clock::now();
      cancel.raise();
    });
    auto r = s.exec(spec, nullptr, StopFlags(&cancel, nullptr, cancel.wake_fd()));
    const auto ended = Clock::now();
    canceller.join();
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_TRUE(r->cancelled);
    ms.push_back(std::chrono::duration<double, std::milli>(ended - raised).count());
  }
  std::sort(ms.begin(), ms.end());
  EXPECT_LT(ms[2], 15.0) << "median ms from the cancel to the call's end; slowest " << ms[4];
}

// Whether a process of this exact argv runs anywhere (the host's /proc sees every sandbox).
// A zombie has no cmdline, so one killed and not yet reaped does not count.
bool runs_with_argv(const std::string& nul_joined) {
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    if (read_text(e.path().string() + "/cmdline") == nul_joined) return true;
  }
  return false;
}

bool eventually_gone(const std::string& nul_joined) {
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  while (runs_with_argv(nul_joined)) {
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

// A daemon that leaves the call's session and process group (setsid --fork: a fork, a new
// session, the parent exits) is not reached by the group kill, yet it dies with the call:
// the worker is the call's subreaper, and the init kills what it hands over at its end.
TEST(Limits, ADaemonThatLeftTheCallsSessionDiesWithTheCall) {
  TempDir ws;
  MOAT_SESSION_OR_SKIP(s, config_for(ws));
  auto r = testing::sh(s,
                       "setsid --fork sh -c 'touch started; exec sleep 86421'; "
                       "until test -e started; do sleep 0.05; done; echo daemon-up");
  ASSERT_TRUE(r) << r.error().message();
  ASSERT_EQ(r->output, "daemon-up\n") << "the daemon never started";
  EXPECT_TRUE(
      eventually_gone(std::string("sleep\0"
                                  "86421\0",
                                  12)))
      << "a setsid daemon outlived the call that started it";
  auto after = testing::sh(s, "echo alive");
  ASSERT_TRUE(after);
  EXPECT_EQ(after->output, "alive\n");
}

// The same when the call ends by its timeout, and for a daemon whose parent double-forked.
TEST(Limits, ADaemonOfACallThatTimesOutDiesWithIt) {
  TempDir ws;
  MOAT_SESSION_OR_SKIP(s, config_for(ws));
  auto r = testing::sh(s,
                       "(setsid sh -c 'touch started; exec sleep 86422' &); "
                       "until test -e started; do sleep 0.05; done; echo daemon-up; sleep 100",
                       5);
  ASSERT_TRUE(r) << r.error().message();
  ASSERT_EQ(r->output, "daemon-up\n") << "the daemon never started";
  EXPECT_TRUE(r->outcome.timed_out);
  EXPECT_TRUE(
      eventually_gone(std::string("sleep\0"
                                  "86422\0",
                                  12)))
      << "a double-forked setsid daemon outlived the call that started it";
}

TEST(Limits, SessionWallTimeEndsTheSession) {
  TempDir ws;
  SessionConfig c = config_for(ws);
  c.limits.session_wall_time_s = 0.7;
  MOAT_SESSION_OR_SKIP(s, c);
  auto r = testing::sh(s, "sleep 30", 20);
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->outcome.limit, "session_wall_time");
  EXPECT_FALSE(testing::sh(s, "true"));
}

TEST(Limits, MoatdDyingKillsEverySandboxProcess) {
  TempDir ws;
  {
    auto probe = Session::create(config_for(ws));
    if (!probe) GTEST_SKIP() << probe.error().message();
  }
  int pipefd[2];
  ASSERT_EQ(pipe(pipefd), 0);
  pid_t fake_moatd = fork();
  if (fake_moatd == 0) {
    auto s = Session::create(config_for(ws));
    if (!s) _exit(1);
    ExecSpec spec;
    spec.argv = {"sleep", "1000"};
    std::thread t([&] { (void)(*s)->exec(spec, nullptr, nullptr); });
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    pid_t init = (*s)->init_pid();
    (void)!write(pipefd[1], &init, sizeof init);
    pause();
    _exit(0);
  }
  close(pipefd[1]);
  pid_t init = -1;
  ASSERT_EQ(read(pipefd[0], &init, sizeof init), static_cast<ssize_t>(sizeof init));
  close(pipefd[0]);
  ASSERT_TRUE(process_exists(init));
  kill(fake_moatd, SIGKILL);
  waitpid(fake_moatd, nullptr, 0);
  auto deadline = Clock::now() + std::chrono::seconds(5);
  while (process_exists(init) && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(process_exists(init)) << "the session init outlived moatd";
}

TEST(FailClosed, UnmappableUidRefusesTheSessionNamingTheLayer) {
  if (geteuid() != 0) GTEST_SKIP() << "the unprivileged uid is only used when moatd is root";
  TempDir ws;
  SessionConfig c = config_for(ws);
  c.unprivileged_uid = static_cast<uid_t>(-1);  // not a valid id: uid_map refuses it
  auto s = Session::create(c);
  ASSERT_FALSE(s);
  // The idmapped workspace is the first layer that writes the mapping.
  EXPECT_EQ(s.error().message().rfind("idmap: write(/proc/", 0), 0u) << s.error().message();
  EXPECT_NE(s.error().message().find("uid_map): Invalid argument"), std::string::npos);
}

TEST(FailClosed, WorkspaceWithoutIdmapSupportIsRefusedUnlessAllowed) {
  if (geteuid() != 0) GTEST_SKIP() << "idmapped workspaces are only used when moatd is root";
  SessionConfig c;
  c.workspace = "/sys/kernel/mm";  // sysfs has no idmapped mounts
  auto s = Session::create(c);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().message().rfind("idmap: ", 0), 0u) << s.error().message();
  c.allow_without.insert("idmap");
  auto allowed = Session::create(c);
  ASSERT_TRUE(allowed) << allowed.error().message();
  EXPECT_NE(to_json((*allowed)->describe()).dump().find("\"idmap\":false"), std::string::npos);
}

TEST(FailClosed, AllowWithoutANamespaceOrAnUnknownLayerIsRefused) {
  TempDir ws;
  SessionConfig c;
  c.workspace = ws.path();
  c.allow_without = {"user_ns"};
  auto ns = Session::create(c);
  ASSERT_FALSE(ns);
  EXPECT_EQ(ns.error().message(),
            "allow_without: user_ns cannot be skipped: the session is its namespaces");
  c.allow_without = {"seccomp", "lanlock"};  // a typo must not pass silently
  auto typo = Session::create(c);
  ASSERT_FALSE(typo);
  EXPECT_NE(typo.error().message().find("'lanlock' is not a layer that can be skipped"),
            std::string::npos)
      << typo.error().message();
}

TEST(FailClosed, RelativeWorkspaceIsRefused) {
  SessionConfig c;
  c.workspace = "relative/path";
  EXPECT_FALSE(Session::create(c));
}

}  // namespace
}  // namespace moat::sandbox
