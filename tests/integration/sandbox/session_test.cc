// tests/integration/sandbox/session_test.cc: a session's isolation as the sandboxed code sees
// it (ids, pid namespace, hostname, filesystem view, environment), as root and rootless.
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <chrono>
#include <filesystem>
#include <thread>

#include "tests/integration/sandbox/test_util.h"

namespace moat::sandbox {
namespace {

using testing::TempDir;

SessionConfig config_for(const TempDir& ws) {
  SessionConfig c;
  c.workspace = ws.path();
  return c;
}

TEST(Session, IdProcAndHostnameAreIsolated) {
  TempDir ws;
  MOAT_SESSION_OR_SKIP(s, config_for(ws));
  auto r = testing::sh(s, "id; ls /proc | wc -l; cat /etc/hostname; hostname");
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->outcome.exit_code, 0) << r->output;
  EXPECT_NE(r->output.find("uid=0(root) gid=0(root)"), std::string::npos) << r->output;
  // A fresh pid namespace: /proc lists the init, sh, ls and wc plus ~60 kernel entries,
  // far below the host's hundreds of pids.
  std::istringstream lines(r->output);
  std::string id_line, count_line, etc_hostname, hostname;
  std::getline(lines, id_line);
  std::getline(lines, count_line);
  std::getline(lines, etc_hostname);
  std::getline(lines, hostname);
  int entries = std::stoi(count_line);
  int pids = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc"))
    if (std::isdigit(e.path().filename().string()[0])) ++pids;
  EXPECT_LT(entries, 90);
  EXPECT_EQ(etc_hostname, "moat");
  EXPECT_EQ(hostname, "moat");
}

TEST(Session, SandboxRootIsNotHostRoot) {
  TempDir ws;
  MOAT_SESSION_OR_SKIP(s, config_for(ws));
  auto r = testing::sh(s, "cat /proc/self/uid_map");
  ASSERT_TRUE(r) << r.error().message();
  std::istringstream in(r->output);
  unsigned inside = 1, outside = 0, count = 0;
  in >> inside >> outside >> count;
  EXPECT_EQ(inside, 0u);
  EXPECT_EQ(count, 1u);
  if (geteuid() == 0) {
    EXPECT_EQ(outside, 65534u) << "as root the sandbox's uid 0 must be an unprivileged host uid";
  } else {
    EXPECT_EQ(outside, geteuid());
  }
}

TEST(Session, WorkspaceIsWritableAndWritesLandAsItsOwner) {
  TempDir ws;
  ws.write("in.txt", "hello\n");
  MOAT_SESSION_OR_SKIP(s, config_for(ws));
  auto r = testing::sh(s, "cat in.txt && echo written > out.txt && mkdir -p d/e && pwd");
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->outcome.exit_code, 0) << r->output;
  EXPECT_EQ(r->output, "hello\n" + ws.path() + "\n");
  EXPECT_EQ(ws.read("out.txt"), "written\n");
  struct stat st;
  ASSERT_EQ(stat(ws.file("out.txt").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, geteuid()) << "writes must land on disk as the workspace's owner";
}

TEST(Session, HostHomeAndRootAreNotVisible) {
  TempDir ws;
  MOAT_SESSION_OR_SKIP(s, config_for(ws));
  auto r = testing::sh(s, "ls -d /root /home 2>&1; ls / | tr '\\n' ' '");
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_NE(r->output.find("/root': No such file or directory"), std::string::npos) << r->output;
  EXPECT_NE(r->output.find("/home': No such file or directory"), std::string::npos) << r->output;
}

TEST(Session, SystemDirectoriesAreReadOnly) {
  TempDir ws;
  MOAT_SESSION_OR_SKIP(s, config_for(ws));
  auto r = testing::sh(s,
                       "touch /usr/moat-x 2>&1; touch /etc/moat-x 2>&1; mkdir /newdir 2>&1;"
                       " echo end");
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(std::count(r->output.begin(), r->output.end(), '\n'), 4) << r->output;
  EXPECT_NE(r->output.find("Read-only file system"), std::string::npos) << r->output;
  EXPECT_FALSE(std::filesystem::exists("/usr/moat-x"));
}

TEST(Session, EnvironmentComesFromTheAllowlistOnly) {
  setenv("MOAT_CANARY_SECRET", "canary-7f3a9", 1);
  TempDir ws;
  SessionConfig c = config_for(ws);
  c.env["POLICY_VAR"] = "p1";
  MOAT_SESSION_OR_SKIP(s, c);
  ExecSpec spec;
  spec.argv = {"/usr/bin/env"};
  spec.env["CALL_VAR"] = "c1";
  std::string out;
  auto r = s.exec(
      spec, [&](std::string_view chunk) { out.append(chunk); }, nullptr);
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(out.find("canary-7f3a9"), std::string::npos);
  std::set<std::string> names;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) names.insert(line.substr(0, line.find('=')));
  EXPECT_EQ(names,
            (std::set<std::string>{"CALL_VAR", "HOME", "LANG", "PATH", "POLICY_VAR", "TERM"}));
  unsetenv("MOAT_CANARY_SECRET");
}

TEST(Session, TmpIsPrivateToTheSession) {
  TempDir ws, host_tmp;
  host_tmp.write("host-canary", "x");
  MOAT_SESSION_OR_SKIP(s, config_for(ws));
  auto r = testing::sh(s, "ls -A /tmp; echo x > /tmp/inside; cat /tmp/inside");
  ASSERT_TRUE(r) << r.error().message();
  // Only the workspace's own path may show through (when it lives under /tmp).
  EXPECT_EQ(r->output.find(std::filesystem::path(host_tmp.path()).filename().string()),
            std::string::npos)
      << r->output;
  EXPECT_NE(r->output.find("x\n"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists("/tmp/inside"));
}

TEST(Session, CommandNotFoundNamesTheExecStep) {
  TempDir ws;
  MOAT_SESSION_OR_SKIP(s, config_for(ws));
  auto r = testing::run(s, {"moat-no-such-command"});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ENOENT);
  EXPECT_EQ(r.error().context, "worker step exec");
}

std::string echo_handler(std::string_view request) {
  char cwd[4096] = {};
  if (getcwd(cwd, sizeof cwd) == nullptr) cwd[0] = '?';
  return "got:" + std::string(request) + " uid:" + std::to_string(getuid()) + " cwd:" + cwd;
}

TEST(Session, RunHandlerRunsTheFunctionInsideTheSandbox) {
  TempDir ws;
  SessionConfig c = config_for(ws);
  c.handler = echo_handler;
  MOAT_SESSION_OR_SKIP(s, c);
  auto r = s.run_handler("{\"x\":1}");
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(*r, "got:{\"x\":1} uid:0 cwd:" + ws.path());
  std::string big(3 << 20, 'a');  // larger than any socket buffer
  auto r2 = s.run_handler(big);
  ASSERT_TRUE(r2) << r2.error().message();
  EXPECT_EQ(r2->size(), big.size() + std::string("got: uid:0 cwd:").size() + ws.path().size());
}

TEST(Session, CreateFileOpensInsideTheViewForTheHost) {
  TempDir ws;
  MOAT_SESSION_OR_SKIP(s, config_for(ws));
  auto fd = s.create_file(ws.path() + "/spill.txt");
  ASSERT_TRUE(fd) << fd.error().message();
  ASSERT_EQ(::write(fd->get(), "spilled", 7), 7);
  EXPECT_EQ(ws.read("spill.txt"), "spilled");
  auto outside = s.create_file("/usr/moat-spill");
  ASSERT_FALSE(outside);
  EXPECT_EQ(outside.error().code, EROFS);
}

// The request moatd sends the session init is JSON. An argv word that is not UTF-8 (rg's or
// fd's canonical path) made nlohmann's dump throw out of exec; an argv word, a cwd and a
// create path each reach the worker with their exact bytes, never U+FFFD.
TEST(Session, ArgvCwdAndPathsThatAreNotUtf8ReachTheWorkerExactly) {
  TempDir ws;
  ASSERT_EQ(::mkdir(ws.file("d\xff").c_str(), 0755), 0);
  MOAT_SESSION_OR_SKIP(s, config_for(ws));
  auto r = testing::run(s, {"touch", ws.file("d\xff/argv\xfe")});
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->outcome.exit_code, 0) << r->output;
  EXPECT_TRUE(std::filesystem::exists(ws.file("d\xff/argv\xfe")));
  ExecSpec spec;
  spec.argv = {"pwd"};
  spec.cwd = ws.file("d\xff");
  std::string out;
  auto ran = s.exec(
      spec, [&](std::string_view c) { out.append(c); }, nullptr);
  ASSERT_TRUE(ran) << ran.error().message();
  EXPECT_EQ(out, ws.file("d\xff") + "\n");
  auto fd = s.create_file(ws.file("d\xff/created\xfd"));
  ASSERT_TRUE(fd) << fd.error().message();
  EXPECT_TRUE(std::filesystem::exists(ws.file("d\xff/created\xfd")));
}

TEST(Session, DescribeJsonNamesEveryLayer) {
  TempDir ws;
  MOAT_SESSION_OR_SKIP(s, config_for(ws));
  nlohmann::json j = to_json(s.describe());
  for (const char* k : {"user_ns", "mount_ns", "pid_ns", "net_ns", "ipc_ns", "uts_ns", "cgroup_ns",
                        "seccomp", "landlock"})
    EXPECT_TRUE(j.contains(k)) << k;
  EXPECT_TRUE(j["seccomp"].get<bool>());
  EXPECT_TRUE(j.contains("skipped"));
  EXPECT_GT(s.init_pid(), 1);
}

TEST(Session, ConcurrentCallsAllComplete) {
  TempDir ws;
  MOAT_SESSION_OR_SKIP(s, config_for(ws));
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int i = 0; i < 8; ++i)
    threads.emplace_back([&, i] {
      auto r = testing::sh(s, "echo " + std::to_string(i));
      if (r && r->output == std::to_string(i) + "\n") ++ok;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 8);
}

TEST(Session, OutlivesTheThreadThatCreatedIt) {
  TempDir ws;
  {
    auto probe = Session::create(config_for(ws));
    if (!probe) GTEST_SKIP() << probe.error().message();
  }
  // PR_SET_PDEATHSIG follows the creating thread: a per-connection thread of moatd that
  // ends must not take the session with it.
  std::unique_ptr<Session> s;
  std::thread([&] { s = std::move(*Session::create(config_for(ws))); }).join();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  auto r = testing::sh(*s, "echo alive");
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->output, "alive\n");
}

TEST(Session, ExecReportsTheHostPidOfTheWorker) {
  TempDir ws;
  MOAT_SESSION_OR_SKIP(s, config_for(ws));
  auto r = testing::sh(s, "echo $$");
  ASSERT_TRUE(r);
  EXPECT_GT(r->outcome.pid, 1);
  EXPECT_NE(r->outcome.pid, s.init_pid());
  EXPECT_NE(std::to_string(r->outcome.pid) + "\n", r->output) << "host pid, not the session's";
}

// The start record is read after the worker has exited and been reaped (a short command on a
// loaded machine): a pidfd then names no process, so the host pid comes from the credentials
// the init attached while the worker still lived.
TEST(Session, ExecReportsTheHostPidOfAWorkerReapedBeforeMoatdReadIt) {
  TempDir ws;
  SessionConfig c = config_for(ws);
  c.test_delay_start_record_ms = 300;
  MOAT_SESSION_OR_SKIP(s, c);
  auto r = testing::sh(s, "echo $$");
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_GT(r->outcome.pid, 1);
  EXPECT_NE(r->outcome.pid, s.init_pid());
  EXPECT_NE(std::to_string(r->outcome.pid) + "\n", r->output) << "host pid, not the session's";
}

TEST(Session, CgroupBoundsTheSessionWhenAHierarchyIsWritable) {
  TempDir ws;
  SessionConfig c = config_for(ws);
  c.limits.pids = 40;
  MOAT_SESSION_OR_SKIP(s, c);
  nlohmann::json j = to_json(s.describe());
  if (!j["cgroup"].get<bool>()) GTEST_SKIP() << "no cgroup: " << j["skipped"]["cgroup"];
  bool found_pids = false;
  for (const auto& dir : j["cgroup_dirs"]) {
    std::string d = dir.get<std::string>();
    if (d.find("/pids/") == std::string::npos && d.find("unified") == std::string::npos) continue;
    found_pids = true;
    std::ifstream in(d + "/pids.max");
    std::string v;
    in >> v;
    EXPECT_EQ(v, "40");
    std::ifstream procs(d + "/cgroup.procs");
    pid_t p = 0;
    bool has_init = false;
    while (procs >> p) has_init |= p == s.init_pid();
    EXPECT_TRUE(has_init) << "the session init runs in the session's cgroup";
  }
  EXPECT_TRUE(found_pids);
}

// Each call gets a worker in a fresh state: what a previous call changed in its own process
// (umask, working directory, environment, rlimits, ignored and blocked signals, open fds)
// does not reach the next one. A worker made from a longer-lived process (a zygote) must
// keep this.
TEST(Session, NothingAPreviousCallChangedReachesTheNextOne) {
  TempDir ws;
  MOAT_SESSION_OR_SKIP(s, config_for(ws));
  const std::string state =
      "umask; pwd; echo \"X=${X-unset}\"; ulimit -n; ulimit -s; "
      "grep -E '^Sig(Ign|Blk)' /proc/self/status; ls /proc/self/fd | tr '\\n' ' '";
  auto before = testing::sh(s, state);
  ASSERT_TRUE(before) << before.error().message();
  auto change = testing::sh(s,
                            "umask 077; cd /tmp; export X=1; ulimit -n 32; ulimit -s 1024; "
                            "trap '' INT TERM; exec 7>/tmp/leak 8</dev/null; "
                            "sleep 0.1; echo changed");
  ASSERT_TRUE(change) << change.error().message();
  EXPECT_NE(change->output.find("changed"), std::string::npos) << change->output;
  auto after = testing::sh(s, state);
  ASSERT_TRUE(after) << after.error().message();
  EXPECT_EQ(after->output, before->output);
  EXPECT_NE(before->output.find("0022\n" + ws.path() + "\nX=unset\n"), std::string::npos)
      << before->output;
  EXPECT_NE(before->output.find("SigIgn:\t0000000000000000"), std::string::npos) << before->output;
}

// ExecSpec::durable (the decision record's sync) runs while the worker is made ready, and
// the command has no effect before it has returned: under the exec watch the worker's own
// exec waits for an answer given only after it; with the watch left out (a test skip, as
// allow_without would) it runs before the worker is asked for.
TEST(Session, ACommandHasNoEffectBeforeItsRecordIsDurable) {
  for (const char* skip : {"none", "exec_watch"}) {
    TempDir ws;
    SessionConfig config = config_for(ws);
    if (std::string(skip) != "none") config.test_skip_step = skip;
    MOAT_SESSION_OR_SKIP(s, config);
    ExecSpec spec;
    spec.argv = {"/bin/sh", "-c", "touch effect"};
    bool effect_before = true;
    spec.durable = [&]() -> Result<void> {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));  // a slow disk's sync
      effect_before = std::filesystem::exists(ws.file("effect"));
      return {};
    };
    auto r = s.exec(spec, nullptr, nullptr);
    ASSERT_TRUE(r) << skip << ": " << r.error().message();
    EXPECT_EQ(r->exit_code, 0) << skip;
    EXPECT_FALSE(effect_before) << skip << ": the command ran before its record was durable";
    EXPECT_TRUE(std::filesystem::exists(ws.file("effect"))) << skip;
  }
}

// A sync that fails refuses the call: the worker, ready and waiting at its exec, never runs
// the command, and the session goes on serving calls.
TEST(Session, ACommandWhoseRecordCannotBeMadeDurableNeverRuns) {
  TempDir ws;
  MOAT_SESSION_OR_SKIP(s, config_for(ws));
  ExecSpec spec;
  spec.argv = {"/bin/sh", "-c", "touch effect"};
  spec.durable = []() -> Result<void> {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    return fail(Error{EIO, "refused: the audit log could not be written (test)"});
  };
  auto r = s.exec(spec, nullptr, nullptr);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("audit log could not be written"), std::string::npos)
      << r.error().message();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_FALSE(std::filesystem::exists(ws.file("effect")));
  auto next = testing::sh(s, "echo still");
  ASSERT_TRUE(next) << next.error().message();
  EXPECT_EQ(next->output, "still\n");
}

}  // namespace
}  // namespace moat::sandbox
