// tests/integration/e2e/resident_attack_test.cc: attacks on how `moat` finds and starts the
// person's resident moatd (agent/resident.h, docs/moatd.md), through the real moat and moatd.
// Each test's XDG_RUNTIME_DIR is a fresh directory of the test's; a moatd it starts is killed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "base/sys.h"
#include "e2e_support.h"
#include "sandbox/protocol.h"
#include "moatd_fixture.h"
#include "net_proxy_fixture.h"
#include "pids_cap.h"

namespace moat::e2e {
namespace {

namespace fs = std::filesystem;

// Kills the moatd listening on `socket`, if one does (its SO_PEERCRED pid).
void kill_listener(const std::string& socket) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, socket.c_str(), sizeof addr.sun_path - 1);
  ucred cred{};
  socklen_t len = sizeof cred;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 && cred.pid > 0)
    ::kill(cred.pid, SIGKILL);
  ::close(fd);
}

class ResidentAttackTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!sandbox_available(&why)) GTEST_SKIP() << why;
    runtime_ = dir_.path() + "/run";
    ws_ = dir_.path() + "/ws";
    fs::create_directories(ws_);
    fs::create_directories(runtime_);
  }
  void TearDown() override {
    kill_listener(runtime_ + "/moat/moatd.sock");
    for (pid_t pid : started_) {
      ::kill(pid, SIGKILL);
      wait_exit(pid, 5);
    }
  }
  SplitRun exec_true() const {
    return run_split({moat_bin(), "sandbox", "exec", "-C", ws_, "--", "/bin/true"},
                     {"XDG_RUNTIME_DIR=" + runtime_, "HOME=" + dir_.path(),
                      "XDG_STATE_HOME=" + dir_.path() + "/state",
                      "XDG_CONFIG_HOME=" + dir_.path() + "/config", "MOATD_BIN=" + moatd_bin()},
                     60);
  }

  std::vector<std::string> env() const {
    return {"HOME=" + dir_.path(), "XDG_STATE_HOME=" + dir_.path() + "/state"};
  }
  // moatd serving `socket` with `flags`, its log at dir_/<name>.log.
  pid_t start_moatd(const std::string& socket, const std::string& name,
                    const std::vector<std::string>& flags,
                    const std::vector<std::string>& more_env = {}) {
    std::vector<std::string> argv = {moatd_bin(), "--socket", socket, "--audit-dir",
                                     dir_.path() + "/audit"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    if (std::find(flags.begin(), flags.end(), "--pool") == flags.end())
      argv.insert(argv.end(), {"--pool", "0"});
    std::vector<std::string> e = env();
    e.insert(e.end(), more_env.begin(), more_env.end());
    const pid_t pid = start(argv, dir_.path() + "/" + name + ".log", e);
    started_.push_back(pid);
    return pid;
  }

  TempDir dir_;
  std::string runtime_, ws_;
  std::vector<pid_t> started_;
};

// A runtime directory another user may write (here: mode 0777, no sticky bit) lets that user
// swap $XDG_RUNTIME_DIR/moat for a symlink to a directory of theirs after moat checked it:
// moat would then connect to their socket and append moatd's log through their symlink. moat
// names the directory and why, and runs a private moatd, leaving the directory untouched.
TEST_F(ResidentAttackTest, ARuntimeDirOthersMayWriteIsRefusedNamingItAndAPrivateMoatdRuns) {
  ASSERT_EQ(chmod(runtime_.c_str(), 0777), 0);
  const SplitRun r = exec_true();
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find(runtime_), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("0777"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(runtime_ + "/moat")) << r.err;
}

// `su` keeps the caller's XDG_RUNTIME_DIR: root's moat must not make its resident moatd's
// directory inside a directory another uid owns (that uid can rename and replace it).
TEST_F(ResidentAttackTest, AnotherUsersRuntimeDirIsRefusedNamingItsOwner) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to give the runtime directory to uid 65534";
  ASSERT_EQ(chmod(runtime_.c_str(), 0700), 0);
  ASSERT_EQ(chown(runtime_.c_str(), 65534, 65534), 0);
  const SplitRun r = exec_true();
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find(runtime_), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("owned by uid 65534"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(runtime_ + "/moat")) << r.err;
}

// A resident moatd's idle end removes its socket path only while the path is still its own
// socket: after the path went (the person's runtime directory removed at logout and made
// anew, a `rm`), a newer moatd listening there keeps it, instead of being orphaned by the old
// one's exit (and a third started beside it).
TEST_F(ResidentAttackTest, AnIdleMoatdLeavesAPathThatIsNoLongerItsSocket) {
  const std::string socket = runtime_ + "/moatd.sock";
  const pid_t old_moatd = start_moatd(socket, "old", {"--idle-exit", "1"});
  ASSERT_TRUE(eventually([&] { return RawClient(socket).connected(); }))
      << read_file(dir_.path() + "/old.log");
  ASSERT_EQ(::unlink(socket.c_str()), 0);
  start_moatd(socket, "new", {});
  ASSERT_TRUE(eventually([&] { return RawClient(socket).connected(); }))
      << read_file(dir_.path() + "/new.log");
  EXPECT_EQ(wait_exit(old_moatd, 10), 0) << read_file(dir_.path() + "/old.log");
  started_.erase(started_.begin());  // reaped
  EXPECT_TRUE(RawClient(socket).connected()) << "the old moatd removed the new one's path";
}

// quota.sessions bounds a user's sessions: the console connection of an interactive session
// (docs/security.md, the console channel) is not a second one. With a quota of 1 a user's only
// session must still get its console, or every ask of it is refused as headless.
TEST_F(ResidentAttackTest, AnInteractiveSessionsConsoleIsNotASecondSessionUnderTheQuota) {
  const std::string config = dir_.path() + "/moatd.toml";
  std::ofstream(config) << "[quota]\nsessions = 1\n";
  const std::string socket = runtime_ + "/moatd.sock";
  start_moatd(socket, "quota", {}, {"MOAT_MOATD_CONFIG=" + config});
  RawClient agent(socket);
  ASSERT_TRUE(agent.connected()) << read_file(dir_.path() + "/quota.log");
  agent.send_json({{"type", "hello"}, {"version", 1}, {"workspace", ws_}, {"headless", false}});
  const nlohmann::json welcome = agent.read_frame();
  ASSERT_EQ(welcome.value("type", ""), "welcome") << welcome.dump();
  RawClient console(socket);
  console.send_json({{"type", "console"},
                     {"session", welcome["session"]},
                     {"token", welcome.value("console_token", "")}});
  const nlohmann::json attached = console.read_frame();
  EXPECT_EQ(attached.value("type", ""), "attached") << attached.dump();
}

// Whether `pid` (a child of this test) is still running.
bool running(pid_t pid) { return ::waitpid(pid, nullptr, WNOHANG) == 0; }

// A typed command the system layer refuses is named in the refusal as the person wrote it. A
// 50 KB word in it (a line the shell parser still reads: up to 64 KiB) once overflowed the call
// thread's stack in std::regex (shown_line, sandbox/call_gate.cc; 40 KB was enough): SIGSEGV of
// the resident moatd, and with it every session of the person's. Refused like any other; moatd
// and the next session go on.
TEST_F(ResidentAttackTest, ARefusedTypedCommandWithA50KBWordLeavesMoatdServing) {
  ASSERT_EQ(chmod(runtime_.c_str(), 0700), 0);
  fs::create_directories(runtime_ + "/moat");
  ASSERT_EQ(chmod((runtime_ + "/moat").c_str(), 0700), 0);
  const std::string socket = runtime_ + "/moat/moatd.sock";
  const pid_t moatd = start_moatd(
      socket, "typed",
      {"--owner-only", "--typed-exec", "--system-policy-dir",
       source_root() + "/tests/integration/e2e/sandbox_exec_policy"});
  ASSERT_TRUE(eventually([&] { return RawClient(socket).connected(); }))
      << read_file(dir_.path() + "/typed.log");
  const SplitRun r = run_split({moat_bin(), "sandbox", "exec", "-C", ws_, "--", "curl",
                                std::string(50000, 'a')},
                               {"XDG_RUNTIME_DIR=" + runtime_, "HOME=" + dir_.path(),
                                "XDG_STATE_HOME=" + dir_.path() + "/state",
                                "XDG_CONFIG_HOME=" + dir_.path() + "/config",
                                "MOATD_BIN=" + moatd_bin()},
                               60);
  EXPECT_EQ(r.exit_code, 126) << r.err.substr(0, 400);
  EXPECT_NE(r.err.find("test.no-curl"), std::string::npos) << r.err.substr(0, 400);
  ASSERT_TRUE(running(moatd)) << read_file(dir_.path() + "/typed.log");
  RawClient next(socket);
  next.send_json({{"type", "hello"}, {"version", 1}, {"workspace", ws_}});
  EXPECT_EQ(next.read_frame().value("type", ""), "welcome");
}

// A client that comes when moatd has no thread to spare is refused with an error frame saying
// so; the accept loop (whose exception was std::terminate: every session of a system moatd
// ended by one more connection at its unit's TasksMax) goes on, and serves the next client.
TEST_F(ResidentAttackTest, AConnectionMoatdHasNoThreadForIsRefusedAndMoatdGoesOn) {
  const std::string socket = runtime_ + "/moatd.sock";
  const pid_t moatd = start_moatd(socket, "cap", {});
  ASSERT_TRUE(eventually([&] { return RawClient(socket).connected(); }))
      << read_file(dir_.path() + "/cap.log");
  MOAT_CAP_OR_SKIP(cap, moatd);
  ASSERT_TRUE(cap.allow_more(0));
  RawClient c(socket);
  c.send_json({{"type", "hello"}, {"version", 1}, {"workspace", ws_}});
  const nlohmann::json refused = c.read_frame(5000);
  EXPECT_NE(refused.dump().find("could not start a thread for this connection"),
            std::string::npos)
      << refused.dump();
  ASSERT_TRUE(running(moatd)) << read_file(dir_.path() + "/cap.log");
  ASSERT_TRUE(cap.lift());
  RawClient next(socket);
  next.send_json({{"type", "hello"}, {"version", 1}, {"workspace", ws_}});
  EXPECT_NE(next.read_frame().dump().find("\"welcome\""), std::string::npos)
      << read_file(dir_.path() + "/cap.log");
}

// A session of a moatd under a pids cap: `c` greeted (headless) on a moatd at `socket`.
#define MOAT_GREETED(c, socket, log)                                                        \
  RawClient c(socket);                                                                      \
  c.send_json({{"type", "hello"}, {"version", 1}, {"workspace", ws_}, {"headless", true}});  \
  ASSERT_NE(c.read_frame().dump().find("\"welcome\""), std::string::npos) << read_file(log)

// A bash call of `command` with `id`.
nlohmann::json bash_call(const std::string& id, const std::string& command) {
  return {{"type", "call"}, {"id", id}, {"tool", "bash"}, {"arguments", {{"command", command}}}};
}

// A call that moatd has no thread for fails alone, as its result naming why, and the session
// goes on. Before: the call's thread that could not start ended its connection unanswered.
TEST_F(ResidentAttackTest, ACallMoatdHasNoThreadForFailsAloneAndTheSessionGoesOn) {
  const std::string socket = runtime_ + "/moatd.sock", log = dir_.path() + "/cap.log";
  const pid_t moatd = start_moatd(socket, "cap", {});
  ASSERT_TRUE(eventually([&] { return RawClient(socket).connected(); })) << read_file(log);
  MOAT_GREETED(c, socket, log);
  MOAT_CAP_OR_SKIP(cap, moatd);
  ASSERT_TRUE(cap.allow_more(0));
  c.send_json(bash_call("c1", "echo ran"));
  nlohmann::json r = c.read_result(10000);
  EXPECT_NE(r.dump().find("\"c1\""), std::string::npos) << r.dump();
  EXPECT_NE(r.dump().find("could not start a thread for this call"), std::string::npos)
      << r.dump();
  ASSERT_TRUE(cap.lift());
  c.send_json(bash_call("c2", "echo ran"));
  r = c.read_result(20000);
  EXPECT_NE(r.dump().find("\"c2\""), std::string::npos) << r.dump();
  EXPECT_NE(r.dump().find("ran"), std::string::npos) << r.dump();
}

// An exec whose exec watch's thread cannot start threw std::system_error on the exec's own
// thread: std::terminate of moatd, and every session on it. Now that exec alone fails, its
// result naming why, and the session goes on.
TEST_F(ResidentAttackTest, AnExecWhoseWatchHasNoThreadFailsAloneAndMoatdGoesOn) {
  const std::string socket = runtime_ + "/moatd.sock", log = dir_.path() + "/cap.log";
  const pid_t moatd = start_moatd(socket, "cap", {});
  ASSERT_TRUE(eventually([&] { return RawClient(socket).connected(); })) << read_file(log);
  MOAT_GREETED(c, socket, log);
  MOAT_CAP_OR_SKIP(cap, moatd);
  ASSERT_TRUE(cap.allow_more(1));  // the exec's own thread, not its watch's
  int p[2];
  ASSERT_EQ(::pipe2(p, O_CLOEXEC), 0);
  const std::string exec =
      sandbox::encode_frame({{"type", "exec"}, {"id", "x1"}, {"argv", {"/bin/true"}}});
  const int fds[3] = {p[0], p[1], p[1]};
  ASSERT_TRUE(sys::send_with_fds(c.fd(), exec.data(), exec.size(), fds, 3));
  ::close(p[0]);
  ::close(p[1]);
  nlohmann::json r = c.read_result(10000);
  EXPECT_NE(r.dump().find("\"x1\""), std::string::npos) << r.dump() << read_file(log);
  EXPECT_NE(r.dump().find("moatd could not run this call"), std::string::npos) << r.dump();
  ASSERT_TRUE(running(moatd)) << read_file(log);
  ASSERT_TRUE(cap.lift());
  c.send_json(bash_call("c2", "echo ran"));
  r = c.read_result(20000);
  EXPECT_NE(r.dump().find("\"c2\""), std::string::npos) << r.dump();
  EXPECT_NE(r.dump().find("ran"), std::string::npos) << r.dump();
}

// The pool builds the next session on a thread of its own after a hello took one; when moatd
// has no thread to spare for its keeper, that build fails (logged, retried at the next hello)
// instead of std::system_error on the pool's thread, std::terminate of moatd.
TEST_F(ResidentAttackTest, APoolRefillWithNoThreadForItsKeeperLeavesMoatdServing) {
  const std::string socket = runtime_ + "/moatd.sock", log = dir_.path() + "/cap.log";
  const pid_t moatd = start_moatd(socket, "cap", {"--pool", "1"});
  ASSERT_TRUE(eventually([&] { return RawClient(socket).connected(); })) << read_file(log);
  {
    MOAT_GREETED(first, socket, log);  // its shape is the one the pool builds ahead
  }
  std::this_thread::sleep_for(std::chrono::seconds(1));  // the pool's session is built
  MOAT_CAP_OR_SKIP(cap, moatd);
  ASSERT_TRUE(cap.allow_more(2));  // the second client's connection and writer threads
  {
    MOAT_GREETED(second, socket, log);  // takes the pooled session: the pool refills
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  ASSERT_TRUE(running(moatd)) << read_file(log);
  ASSERT_TRUE(cap.lift());
  MOAT_GREETED(third, socket, log);
}

// The session's network proxy gives each connection a thread; when moatd has none to spare,
// that connection gets a 503 naming why and a record, instead of std::system_error on the
// proxy's accept thread: std::terminate of moatd and every session on it. A program in the
// sandbox opens it; the same call's next connection, once a thread is free, goes through.
class ProxyAttackTest : public NetProxyTest {};

TEST_F(ProxyAttackTest, AProxyConnectionMoatdHasNoThreadForGetsA503AndMoatdGoesOn) {
  ASSERT_TRUE(eventually([&] { return RawClient(socket_).connected(); })) << moatd_log();
  RawClient c(socket_);
  c.send_json({{"type", "hello"}, {"version", 1}, {"workspace", ws_}, {"headless", true}});
  ASSERT_NE(c.read_frame().dump().find("\"welcome\""), std::string::npos) << moatd_log();
  MOAT_CAP_OR_SKIP(cap, pid_);
  const std::string get = "curl -sS --max-time 10 -o /dev/null -w '%{http_code}\\n' " +
                          url("allowed.test", local_.port());
  // The call's threads start first; its curl connects once moatd is capped.
  c.send_json(bash_call("n1", "sleep 1; " + get + "; touch capped-done; sleep 2; " + get));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  ASSERT_TRUE(cap.allow_more(0));
  ASSERT_TRUE(eventually([&] { return fs::exists(ws_ + "/capped-done"); },
                         std::chrono::seconds(15)))
      << moatd_log();
  ASSERT_TRUE(cap.lift());
  const nlohmann::json r = c.read_result(30000);
  const std::string text = r.dump();
  EXPECT_NE(text.find("503\\n200"), std::string::npos) << text << moatd_log();
  EXPECT_EQ(local_.accepted(), 1);
  EXPECT_EQ(::waitpid(pid_, nullptr, WNOHANG), 0) << moatd_log();
}

// moatd with systemd's socket (LISTEN_PID, LISTEN_FDS, fd 3 listening at `socket`) and
// `flags`, as the system moatd's unit runs it; its output in `log`.
pid_t start_activated(const std::string& socket, const std::string& log,
                      const std::vector<std::string>& flags) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  socket.copy(addr.sun_path, sizeof addr.sun_path - 1);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd, 16) != 0)
    return -1;
  std::vector<std::string> argv = {moatd_bin()};
  argv.insert(argv.end(), flags.begin(), flags.end());
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int held = ::fcntl(fd, F_DUPFD_CLOEXEC, 10);
    const int out = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(out, 1);
    ::dup2(out, 2);
    ::dup2(held, 3);  // not close-on-exec, as systemd passes it
    ::setenv("LISTEN_PID", std::to_string(::getpid()).c_str(), 1);
    ::setenv("LISTEN_FDS", "1", 1);
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  ::close(fd);
  return pid;
}

// A system moatd may end when idle (systemd starts it again at the next connection), but the
// socket's path is systemd's: moatd's idle end leaves it, or the system moatd is unreachable
// until the socket unit is restarted.
TEST_F(ResidentAttackTest, AnIdleSystemMoatdLeavesSystemdsSocketPath) {
  const std::string socket = runtime_ + "/system.sock";
  const std::string log = dir_.path() + "/system.log";
  const pid_t pid = start_activated(
      socket, log, {"--audit-dir", dir_.path() + "/audit", "--pool", "0", "--idle-exit", "1"});
  ASSERT_GT(pid, 0);
  started_.push_back(pid);
  EXPECT_EQ(wait_exit(pid, 10), 0) << read_file(log);
  started_.pop_back();  // reaped
  EXPECT_TRUE(fs::exists(socket)) << read_file(log);
}

}  // namespace
}  // namespace moat::e2e

namespace moat::e2e {
namespace {

// A1, [quota] audit_bytes_per_day: a call let run while the day was under the quota can
// go on writing records without bound: each program it starts is an `exec` record, never
// refused. One call that starts `true` 400 times, from a session at a quota of 8192 bytes, must
// leave the day's log within the quota and a bounded overshoot (64 KiB here), not the 400
// records' ~450 KiB (1500 of them wrote 1.7 MB). HELD for R4 (sandbox/user_quota.cc admit, the
// exec watch's record): DISABLED_ until the fix lands; it fails against HEAD (A-2 in
// /tmp/tasks36/findings.md).
class AuditQuotaAttackTest : public MoatdProcess {
 protected:
  void SetUp() override {
    std::string why;
    if (!sandbox_available(&why)) GTEST_SKIP() << "a session needs a sandbox: " << why;
    make_workspace();
  }
};

TEST_F(AuditQuotaAttackTest, OneCallsProgramsCannotWriteTheLogFarPastTheDaysQuota) {
  const std::string config = dir_.path() + "/moatd.toml";
  std::ofstream(config) << "[quota]\naudit_bytes_per_day = 8192\n";
  start_moatd(default_policy_flags(), {"MOAT_MOATD_CONFIG=" + config});
  ASSERT_TRUE(eventually([&] { return RawClient(socket_).connected(); })) << moatd_log();
  RawClient c(socket_);
  c.send_json({{"type", "hello"}, {"version", 1}, {"workspace", ws_}, {"headless", true}});
  const nlohmann::json welcome = c.read_frame();
  ASSERT_EQ(welcome.value("type", ""), "welcome") << welcome.dump() << moatd_log();
  c.send_json({{"type", "call"}, {"id", "loop"}, {"tool", "bash"},
               {"arguments", {{"command", "seq 400 | xargs -n 1 true"}}}});
  const nlohmann::json result = c.read_result();
  ASSERT_EQ(result.value("type", ""), "result") << result.dump().substr(0, 800);
  // Past the quota each program is refused naming the audit log.
  EXPECT_THAT(result.dump(), ::testing::HasSubstr("the audit log could not be written"))
      << result.dump().substr(0, 800);
  c.send_json({{"type", "bye"}});
  (void)c.read_frame();
  const std::string log = welcome.value("audit", "");
  std::map<std::string, std::size_t> types;  // what filled the log, for the failure's message
  for (const nlohmann::json& r : records_of(log)) ++types[r.value("type", "")];
  EXPECT_LE(fs::file_size(log), 8192u + 65536u)
      << nlohmann::json(types).dump() << " records past a quota of 8192 bytes";
}

}  // namespace
}  // namespace moat::e2e
