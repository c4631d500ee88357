// tests/integration/e2e/moatd_resident_test.cc: the person's resident moatd (agent/resident.h,
// docs/moatd.md) through the real moat and moatd: started once under $XDG_RUNTIME_DIR/moat
// however many `moat` start at once, reused, refused for a directory others can reach,
// untouched by --private; moatd's --idle-exit, --owner-only and per-peer typed exec.
// XDG_RUNTIME_DIR is a fresh directory of the test's; every resident moatd is killed at the end.
#include <gtest/gtest.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "e2e_support.h"

namespace moat::e2e {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

// The pids of the moatd processes serving `socket` that no such moatd started (a moatd's
// session keepers and helpers carry its command line too).
std::vector<pid_t> moatds_serving(const std::string& socket) {
  std::vector<pid_t> found;
  const std::string needle = std::string("--socket") + '\0' + socket + '\0';
  auto serves = [&](const std::string& pid) {
    return read_file("/proc/" + pid + "/cmdline").find(needle) != std::string::npos;
  };
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string pid = e.path().filename();
    if (pid.find_first_not_of("0123456789") != std::string::npos || !serves(pid)) continue;
    std::ifstream status("/proc/" + pid + "/status");
    std::string line, ppid;
    while (std::getline(status, line))
      if (line.rfind("PPid:", 0) == 0) ppid = line.substr(line.find_first_not_of(" \t", 5));
    if (!serves(ppid)) found.push_back(std::stoi(pid));
  }
  return found;
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

class ResidentMoatdTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!sandbox_available(&why)) GTEST_SKIP() << why;
    runtime_ = dir_.path() + "/run";
    ws_ = dir_.path() + "/ws";
    fs::create_directories(ws_);
    fs::create_directories(runtime_);
    chmod(runtime_.c_str(), 0700);
    socket_ = runtime_ + "/moat/moatd.sock";
  }
  void TearDown() override {
    for (pid_t pid : moatds_serving(socket_)) kill(pid, SIGKILL);
    for (pid_t pid : started_) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
  }
  std::vector<std::string> env() const {
    return {"XDG_RUNTIME_DIR=" + runtime_, "HOME=" + dir_.path(),
            "XDG_STATE_HOME=" + dir_.path() + "/state",
            "XDG_CONFIG_HOME=" + dir_.path() + "/config", "MOATD_BIN=" + moatd_bin()};
  }
  std::vector<std::string> exec_line(const std::vector<std::string>& opts = {}) const {
    std::vector<std::string> line = {moat_bin(), "sandbox", "exec", "-C", ws_};
    line.insert(line.end(), opts.begin(), opts.end());
    line.insert(line.end(), {"--", "/bin/true"});
    return line;
  }
  double exec_ms(const std::vector<std::string>& opts = {}) {
    const auto t0 = Clock::now();
    const SplitRun r = run_split(exec_line(opts), env(), 60);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  }
  // moatd serving `socket_` with `flags`, its log at dir_/moatd.log.
  pid_t start_moatd(const std::vector<std::string>& flags) {
    fs::create_directories(runtime_ + "/moat");
    chmod((runtime_ + "/moat").c_str(), 0700);
    std::vector<std::string> argv = {moatd_bin(), "--socket", socket_, "--audit-dir",
                                     dir_.path() + "/audit"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    const pid_t pid = start(argv, dir_.path() + "/moatd.log", env());
    started_.push_back(pid);
    return pid;
  }
  // Whether `pid` (a child of this test) has exited within `ms`; its status in *status.
  static bool exits_within(pid_t pid, int ms, int* status) {
    return eventually([&] { return waitpid(pid, status, WNOHANG) == pid; },
                      std::chrono::milliseconds(ms));
  }

  TempDir dir_;
  std::string runtime_, ws_, socket_;
  std::vector<pid_t> started_;
};

TEST_F(ResidentMoatdTest, TwoExecsStartedAtOnceEndOnOneMoatdAndTheNextReusesIt) {
  const auto t0 = Clock::now();
  const pid_t a = start(exec_line(), dir_.path() + "/a.log", env());
  const pid_t b = start(exec_line(), dir_.path() + "/b.log", env());
  EXPECT_EQ(wait_exit(a, 60), 0) << read_file(dir_.path() + "/a.log");
  EXPECT_EQ(wait_exit(b, 60), 0) << read_file(dir_.path() + "/b.log");
  const double cold_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  const std::vector<pid_t> moatds = moatds_serving(socket_);
  ASSERT_EQ(moatds.size(), 1u) << read_file(runtime_ + "/moat/moatd.log");
  struct stat st {};
  ASSERT_EQ(lstat((runtime_ + "/moat").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_EQ(st.st_uid, geteuid());
  const double warm_ms = exec_ms();
  EXPECT_EQ(moatds_serving(socket_), moatds) << "the next exec started another moatd";
  const double private_ms = exec_ms({"--private"});
  std::printf("[ resident ] two cold execs at once %.1f ms; next exec on the resident moatd "
              "%.1f ms; --private %.1f ms\n", cold_ms, warm_ms, private_ms);
}

TEST_F(ResidentMoatdTest, ItsSandboxExecIsTypedByThePerson) {
  exec_ms();
  ASSERT_EQ(moatds_serving(socket_).size(), 1u) << "not served by the resident moatd";
  std::string logs;
  for (const auto& e : fs::recursive_directory_iterator(dir_.path() + "/state"))
    if (e.path().extension() == ".jsonl") logs += read_file(e.path());
  EXPECT_TRUE(has(logs, "\"exec_typed_by\":\"person\"")) << logs.substr(0, 2000);
}

TEST_F(ResidentMoatdTest, AGroupReadableDirIsRefusedNamingItAndAPrivateMoatdRuns) {
  const std::string dir = runtime_ + "/moat";
  fs::create_directories(dir);
  chmod(dir.c_str(), 0750);
  const SplitRun r = run_split(exec_line(), env(), 60);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(has(r.err, dir + " has mode 0750, not 0700")) << r.err;
  EXPECT_TRUE(has(r.err, "using a private moatd")) << r.err;
  EXPECT_FALSE(fs::exists(socket_));
  EXPECT_TRUE(moatds_serving(socket_).empty());
}

TEST_F(ResidentMoatdTest, ASymlinkedDirIsRefusedNamingIt) {
  fs::create_directories(dir_.path() + "/elsewhere");
  chmod((dir_.path() + "/elsewhere").c_str(), 0700);
  fs::create_directory_symlink(dir_.path() + "/elsewhere", runtime_ + "/moat");
  const SplitRun r = run_split(exec_line(), env(), 60);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(has(r.err, runtime_ + "/moat is a symlink")) << r.err;
  EXPECT_FALSE(fs::exists(dir_.path() + "/elsewhere/moatd.sock"));
}

TEST_F(ResidentMoatdTest, PrivateLeavesTheRuntimeDirAlone) {
  const SplitRun r = run_split(exec_line({"--private"}), env(), 60);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(fs::exists(runtime_ + "/moat"));
  EXPECT_TRUE(moatds_serving(socket_).empty());
}

TEST_F(ResidentMoatdTest, AnOptionOnlyAPrivateMoatdTakesChoosesOne) {
  const SplitRun r = run_split(exec_line({"--audit-dir", dir_.path() + "/audit"}), env(), 60);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(fs::exists(runtime_ + "/moat"));
}

TEST_F(ResidentMoatdTest, ItExitsAfterItsIdleTimeButNotWhileASessionLives) {
  const pid_t pid = start_moatd({"--owner-only", "--idle-exit", "0.5"});
  int status = 0;
  {
    RawClient c(socket_);
    ASSERT_TRUE(c.connected()) << read_file(dir_.path() + "/moatd.log");
    c.send_json({{"type", "hello"}, {"version", 1}, {"workspace", ws_}});
    ASSERT_EQ(c.read_frame().value("type", ""), "welcome");
    EXPECT_FALSE(exits_within(pid, 1000, &status)) << "moatd ended while a session lived";
  }
  ASSERT_TRUE(exits_within(pid, 3000, &status)) << "no idle exit";
  started_.clear();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_FALSE(fs::exists(socket_)) << "the socket path outlived moatd";
}

TEST_F(ResidentMoatdTest, AnotherUsersClientIsRefusedNamingBothUids) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to connect as another uid";
  start_moatd({"--owner-only"});
  ASSERT_TRUE(RawClient(socket_).connected()) << read_file(dir_.path() + "/moatd.log");
  chmod((runtime_ + "/moat").c_str(), 0711);  // so uid 65534 reaches the socket (its test only)
  chmod(runtime_.c_str(), 0711);
  chmod(dir_.path().c_str(), 0711);
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  const pid_t child = fork();
  if (child == 0) {
    if (setgid(65534) != 0 || setuid(65534) != 0) _exit(10);
    RawClient c(socket_);
    c.send_json({{"type", "hello"}, {"version", 1}, {"workspace", "/tmp"}});
    const std::string frame = c.read_frame(5000).dump();
    (void)!write(p[1], frame.data(), frame.size());
    _exit(0);
  }
  close(p[1]);
  std::string frame;
  char buf[4096];
  for (ssize_t n; (n = read(p[0], buf, sizeof buf)) > 0;) frame.append(buf, n);
  close(p[0]);
  waitpid(child, nullptr, 0);
  EXPECT_TRUE(has(frame, "serves uid 0 only; the client runs as uid 65534")) << frame;
}

// A forked client as the agent loop is (no_new_privs and a seccomp filter) or plain, whose
// hello asks for typed exec when `ask`: the session.start's exec_typed_by.
std::string typed_by(const std::string& socket, const std::string& ws, bool loop_like, bool ask) {
  int p[2];
  if (pipe(p) != 0) return "pipe failed";
  const pid_t child = fork();
  if (child == 0) {
    sock_filter allow = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    sock_fprog prog{1, &allow};
    if (loop_like && (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
                      prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0))
      _exit(10);
    RawClient c(socket);
    json hello = {{"type", "hello"}, {"version", 1}, {"workspace", ws}};
    if (ask) hello["typed_exec"] = true;
    c.send_json(hello);
    const std::string audit = c.read_frame().value("audit", "");
    (void)!write(p[1], audit.data(), audit.size());
    _exit(0);
  }
  close(p[1]);
  std::string audit;
  char buf[4096];
  for (ssize_t n; (n = read(p[0], buf, sizeof buf)) > 0;) audit.append(buf, n);
  close(p[0]);
  waitpid(child, nullptr, 0);
  std::string by = "no session.start in '" + audit + "'";
  eventually([&] {
    for (const json& r : of_type(records_of(audit), "session.start")) by = r.dump();
    return !has(by, "no session.start");
  });
  if (has(by, "\"exec_typed_by\":\"person\"")) return "person";
  if (has(by, "\"exec_typed_by\":\"agent\"")) return "agent";
  return by;
}

TEST_F(ResidentMoatdTest, TypedExecOnlyForAPlainPeerWhoseHelloAsks) {
  start_moatd({"--owner-only", "--typed-exec"});
  ASSERT_TRUE(RawClient(socket_).connected()) << read_file(dir_.path() + "/moatd.log");
  EXPECT_EQ(typed_by(socket_, ws_, /*loop_like=*/false, /*ask=*/true), "person");
  EXPECT_EQ(typed_by(socket_, ws_, /*loop_like=*/false, /*ask=*/false), "agent");
  EXPECT_EQ(typed_by(socket_, ws_, /*loop_like=*/true, /*ask=*/true), "agent");
}

TEST_F(ResidentMoatdTest, TypedExecOnASocketWithoutOwnerOnlyIsRefused) {
  const e2e::Run r = run({moatd_bin(), "--socket", socket_, "--typed-exec"}, env());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(has(r.out, "--typed-exec")) << r.out;
  EXPECT_TRUE(has(r.out, "--owner-only")) << r.out;
}

// Issue 30 point 4: the resident moatd keeps the person's git identity while their git config
// is unchanged (no git run per hello); an edit between two execs that keeps the file's size
// and inode is the next commit's author.
TEST_F(ResidentMoatdTest, AGitIdentityChangedBetweenTwoExecsIsTheNextCommitsAuthor) {
  auto author = [&] {
    const SplitRun r = run_split({moat_bin(), "sandbox", "exec", "-C", ws_, "--", "/bin/sh", "-c",
                                  "git init -q . && git commit -q --allow-empty -m x && "
                                  "git log -1 --format=who=%an"},
                                 env(), 60);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out;
  };
  const std::string gitconfig = dir_.path() + "/.gitconfig";
  std::ofstream(gitconfig) << "[user]\n\tname = Ada\n\temail = a@example.org\n";
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // settled (git_identity.h)
  EXPECT_TRUE(has(author(), "who=Ada"));
  EXPECT_TRUE(has(author(), "who=Ada"));  // the kept answer
  std::ofstream(gitconfig, std::ios::trunc) << "[user]\n\tname = Bob\n\temail = b@example.org\n";
  const std::string bob = author();
  EXPECT_TRUE(has(bob, "who=Bob")) << bob;
  EXPECT_EQ(moatds_serving(socket_).size(), 1u) << "not one resident moatd";
}

}  // namespace
}  // namespace moat::e2e
