// tests/integration/e2e/resident_isolation_test.cc: one session's calls, asks, sandbox and audit
// log stay its own whichever way moatd runs (issue 30: "a resident moatd changes no
// guarantee"). Each test runs against the three (docs/architecture.md): a private moatd per
// session (`moatd --fd`, as moat run starts it), a resident one (`moatd --socket --idle-exit`,
// the user's own, serving every session of theirs) and a system one (root, given its listening
// socket by socket activation: LISTEN_PID, LISTEN_FDS and fd 3, as systemd passes it).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "e2e_support.h"
#include "moatd_fixture.h"

namespace moat::e2e {
namespace {

using nlohmann::json;

enum class Mode { kPrivate, kResident, kSystem };

std::string mode_name(const ::testing::TestParamInfo<Mode>& info) {
  switch (info.param) {
    case Mode::kPrivate: return "Private";
    case Mode::kResident: return "Resident";
    case Mode::kSystem: return "System";
  }
  return "";
}

// A listening AF_UNIX socket at `path` (-1 on failure).
int listen_at(const std::string& path) {
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  path.copy(addr.sun_path, sizeof addr.sun_path - 1);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || listen(fd, 16) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Starts argv with `fds` at 3, 4, ... (nothing else inherited), the test's environment plus
// `env` (LISTEN_PID set to the child's own pid when `listen_pid`), output to `log`.
pid_t start_with_fds(const std::vector<std::string>& argv, const std::vector<int>& fds,
                     const std::vector<std::string>& env, bool listen_pid,
                     const std::string& log) {
  const int out = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(out, 1);
    dup2(out, 2);
    dup2(open("/dev/null", O_RDONLY), 0);
    std::vector<int> moved;  // first out of the way of 3, 4, ...
    for (int fd : fds) moved.push_back(fcntl(fd, F_DUPFD_CLOEXEC, 100));
    for (std::size_t i = 0; i < moved.size(); ++i) dup2(moved[i], 3 + static_cast<int>(i));
    for (const auto& kv : env) putenv(const_cast<char*>(kv.c_str()));
    if (listen_pid) setenv("LISTEN_PID", std::to_string(getpid()).c_str(), 1);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    setpgid(0, 0);
    execv(args[0], args.data());
    _exit(127);
  }
  close(out);
  return pid;
}

// One session as a client sees it: its connection, its console (interactive sessions: where
// moatd's asks go) and the welcome.
struct OpenSession {
  std::unique_ptr<RawClient> client, console;
  json welcome;
};

class MoatdModesTest : public MoatdProcess, public ::testing::WithParamInterface<Mode> {
 protected:
  void SetUp() override {
    std::string why;
    if (!sandbox_available(&why)) GTEST_SKIP() << why;
    make_workspace();
    std::ofstream(ws_ + "/hello.txt") << "hello from the workspace\n";
    if (GetParam() == Mode::kResident) start_resident();
    if (GetParam() == Mode::kSystem) start_system();
  }
  void TearDown() override {
    for (pid_t p : privates_) {
      kill(p, SIGTERM);
      wait_exit(p, 20);
    }
    if (listen_fd_ >= 0) close(listen_fd_);
    MoatdProcess::TearDown();
  }

  // The user's own moatd on a socket, ending when idle (R1's flag, where this moatd has it).
  void start_resident() {
    std::vector<std::string> flags = default_policy_flags();
    if (run({moatd_bin(), "--help"}).out.find("--idle-exit") != std::string::npos)
      flags.insert(flags.end(), {"--idle-exit", "600"});
    start_moatd(flags);
    ASSERT_TRUE(eventually([&] { return RawClient(socket_).connected(); })) << moatd_log();
  }

  // A root moatd given its listening socket as systemd gives it (sd_listen_fds(3)).
  void start_system() {
    if (geteuid() != 0) GTEST_SKIP() << "a system moatd runs as root; this test runs as uid "
                                     << geteuid();
    socket_ = dir_.path() + "/system.sock";
    const int fd = listen_at(socket_);
    ASSERT_GE(fd, 0) << socket_;
    chmod(socket_.c_str(), 0666);  // systemd's SocketMode default: every user may connect
    std::vector<std::string> argv = {moatd_bin()};
    for (const auto& f : default_policy_flags()) argv.push_back(f);
    pid_ = start_with_fds(argv, {fd}, {"LISTEN_FDS=1", "LISTEN_FDNAMES=moatd.socket"}, true,
                          dir_.path() + "/moatd.log");
    close(fd);
    // A moatd without socket activation refuses to start without --socket or --fd: the
    // probe's connection waits in the backlog until then, and is reset when it exits.
    RawClient probe(socket_);
    probe.send_bytes(frame_of("{"));
    const json e = probe.read_frame(10000);
    if (e.is_null() && !moatd_alive()) {
      pid_ = -1;  // moatd_alive reaped it
      GTEST_SKIP() << "this moatd does not take a socket by socket activation yet: "
                   << moatd_log();
    }
    ASSERT_EQ(e.value("type", ""), "error") << e.dump() << moatd_log();
  }

  json hello(bool headless) const {
    return {{"type", "hello"}, {"version", 1}, {"workspace", ws_}, {"headless", headless}};
  }

  // A session: on its own private moatd (the connection and the console accepted here and
  // handed to it, as moat run hands it a socketpair), or on the shared one.
  OpenSession open_session(bool headless = true) {
    OpenSession s;
    if (GetParam() == Mode::kPrivate) return open_private(headless);
    s.client = std::make_unique<RawClient>(socket_);
    s.client->send_json(hello(headless));
    s.welcome = s.client->read_frame();
    if (headless || s.welcome.value("type", "") != "welcome") return s;
    s.console = std::make_unique<RawClient>(socket_);
    s.console->send_json({{"type", "console"},
                          {"session", s.welcome.value("session", "")},
                          {"token", s.welcome.value("console_token", "")}});
    EXPECT_EQ(s.console->read_frame().value("type", ""), "attached") << moatd_log();
    return s;
  }
  OpenSession open_private(bool headless) {
    OpenSession s;
    if (listen_fd_ < 0) listen_fd_ = listen_at(socket_ = dir_.path() + "/private.sock");
    std::vector<std::string> argv = {moatd_bin(), "--fd", "3"};
    for (const auto& f : default_policy_flags()) argv.push_back(f);
    s.client = std::make_unique<RawClient>(socket_);
    std::vector<int> fds = {accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC)};
    if (!headless) {
      s.console = std::make_unique<RawClient>(socket_);
      fds.push_back(accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC));
      argv.insert(argv.end(), {"--console-fd", "4"});
    }
    privates_.push_back(start_with_fds(argv, fds, {}, false, dir_.path() + "/moatd.log"));
    for (int fd : fds) close(fd);
    s.client->send_json(hello(headless));
    s.welcome = s.client->read_frame();
    return s;
  }

  static json result_of(RawClient& c, const std::string& id, int timeout_ms = 20000) {
    for (;;) {
      json f = c.read_frame(timeout_ms);
      if (f.is_null() || (f.value("type", "") == "result" && f.value("id", "") == id)) return f;
    }
  }
  static void call(RawClient& c, const std::string& id, const std::string& tool,
                   const json& arguments) {
    c.send_json({{"type", "call"}, {"id", id}, {"tool", tool}, {"arguments", arguments}});
  }
  static std::string text_of(const json& result) {
    std::string out;
    for (const auto& part : result.value("content", json::array()))
      out += part.value("text", "");
    return out;
  }
  // Ends the session (bye, moatd's bye, its close): its audit log is complete after this.
  static void end(OpenSession& s) {
    s.client->send_json({{"type", "bye"}});
    json f;
    do f = s.client->read_frame(); while (!f.is_null() && f.value("type", "") != "bye");
    EXPECT_EQ(f.value("type", ""), "bye") << f.dump();
    EXPECT_TRUE(s.client->closed_by_peer(20000));
  }

  std::vector<pid_t> privates_;
  int listen_fd_ = -1;
};

// The same call id in two sessions at once: each result reaches its own session; a file one
// session leaves in its /tmp and the process it runs are not seen from the other.
TEST_P(MoatdModesTest, TwoSessionsCallsTmpAndProcessesStayTheirOwn) {
  OpenSession a = open_session(), b = open_session();
  ASSERT_EQ(a.welcome.value("type", ""), "welcome") << a.welcome.dump() << moatd_log();
  ASSERT_EQ(b.welcome.value("type", ""), "welcome") << b.welcome.dump() << moatd_log();
  EXPECT_NE(a.welcome.value("session", ""), b.welcome.value("session", ""));
  call(*a.client, "c1", "bash",
       {{"command", "echo a-secret > /tmp/mine && touch " + ws_ + "/a-started && exec sleep 37"}});
  ASSERT_TRUE(eventually([&] { return std::filesystem::exists(ws_ + "/a-started"); }))
      << moatd_log();
  call(*b.client, "c1", "bash",
       {{"command",
         "cat /tmp/mine 2>/dev/null || echo no-file; cat /proc/[0-9]*/cmdline | tr '\\0' ' '"}});
  const json rb = result_of(*b.client, "c1");
  ASSERT_EQ(rb.value("type", ""), "result") << moatd_log();
  EXPECT_NE(text_of(rb).find("no-file"), std::string::npos) << rb.dump();
  EXPECT_EQ(text_of(rb).find("sleep 37"), std::string::npos) << "the other session's process\n"
                                                             << rb.dump();
  a.client->send_json({{"type", "cancel"}, {"id", "c1"}});
  const json ra = result_of(*a.client, "c1");
  ASSERT_EQ(ra.value("type", ""), "result") << moatd_log();
  EXPECT_TRUE(ra.value("isError", false)) << "A's own call, cancelled: " << ra.dump();
}

// An ask reaches its own session's console only, and holds no other session's write.
TEST_P(MoatdModesTest, AnAskReachesOnlyItsSessionsConsoleAndHoldsNoOtherSessionsWrite) {
  OpenSession asker = open_session(/*headless=*/false), other = open_session(false);
  ASSERT_EQ(asker.welcome.value("type", ""), "welcome") << asker.welcome.dump() << moatd_log();
  ASSERT_EQ(other.welcome.value("type", ""), "welcome") << other.welcome.dump() << moatd_log();
  // Outside the workspace and /tmp, the default policy asks before a write.
  call(*asker.client, "w", "write", {{"path", "/etc/moat-isolation-test.conf"}, {"content", "x"}});
  const json ask = asker.console->read_frame();
  ASSERT_EQ(ask.value("type", ""), "ask") << ask.dump() << moatd_log();
  call(*other.client, "w", "write", {{"path", ws_ + "/other.txt"}, {"content", "written\n"}});
  const json r = result_of(*other.client, "w");
  ASSERT_EQ(r.value("type", ""), "result") << "the write waited for another session's ask";
  EXPECT_FALSE(r.value("isError", true)) << r.dump();
  EXPECT_TRUE(other.console->read_frame(300).is_null()) << "another session's ask reached it";
  asker.console->send_json({{"type", "answer"}, {"ask", ask["ask"]}, {"decision", "deny"}});
  EXPECT_TRUE(result_of(*asker.client, "w").value("isError", false));
  EXPECT_FALSE(std::filesystem::exists("/etc/moat-isolation-test.conf"));
}

// Each session's audit log holds its own calls only, and verifies.
TEST_P(MoatdModesTest, EachSessionsAuditLogHoldsItsOwnCallsOnlyAndVerifies) {
  OpenSession a = open_session(), b = open_session();
  ASSERT_EQ(a.welcome.value("type", ""), "welcome") << a.welcome.dump() << moatd_log();
  ASSERT_EQ(b.welcome.value("type", ""), "welcome") << b.welcome.dump() << moatd_log();
  call(*a.client, "1", "bash", {{"command", "echo marker-of-a"}});
  call(*b.client, "1", "bash", {{"command", "echo marker-of-b"}});
  ASSERT_EQ(result_of(*a.client, "1").value("type", ""), "result") << moatd_log();
  ASSERT_EQ(result_of(*b.client, "1").value("type", ""), "result") << moatd_log();
  end(a);
  end(b);
  const std::string log_a = a.welcome.value("audit", ""), log_b = b.welcome.value("audit", "");
  ASSERT_NE(log_a, log_b);
  const std::string text_a = read_file(log_a), text_b = read_file(log_b);
  EXPECT_NE(text_a.find("marker-of-a"), std::string::npos) << log_a;
  EXPECT_EQ(text_a.find("marker-of-b"), std::string::npos) << "B's call in A's log";
  EXPECT_NE(text_b.find("marker-of-b"), std::string::npos) << log_b;
  EXPECT_EQ(text_b.find("marker-of-a"), std::string::npos) << "A's call in B's log";
  for (const auto& log : {log_a, log_b}) {
    const e2e::Run v = run({moat_bin(), "audit", "verify", log});
    EXPECT_EQ(v.exit_code, 0) << log << "\n" << v.out;
  }
}

// A client breaking the protocol is closed alone; a session open meanwhile goes on.
TEST_P(MoatdModesTest, AClientBreakingTheProtocolDisturbsNoOtherSession) {
  OpenSession good = open_session();
  ASSERT_EQ(good.welcome.value("type", ""), "welcome") << good.welcome.dump() << moatd_log();
  for (const std::string& junk : {frame_of("{"), std::string("\xff\xff\xff\xff", 4)}) {
    OpenSession bad;
    if (GetParam() == Mode::kPrivate) bad = open_private(true);  // its own moatd, greeted
    else bad.client = std::make_unique<RawClient>(socket_);
    bad.client->send_bytes(junk);
    json e;
    do e = bad.client->read_frame(); while (!e.is_null() && e.value("type", "") != "error");
    EXPECT_EQ(e.value("type", ""), "error") << e.dump();
    EXPECT_TRUE(bad.client->closed_by_peer());
  }
  call(*good.client, "r", "read", {{"path", ws_ + "/hello.txt"}});
  const json r = result_of(*good.client, "r");
  ASSERT_EQ(r.value("type", ""), "result") << moatd_log();
  EXPECT_NE(text_of(r).find("hello from the workspace"), std::string::npos) << r.dump();
}

// The system moatd serves every user: a session of another user (uid 65534, through moat
// sandbox exec) sees neither this session's /tmp nor its processes.
TEST_P(MoatdModesTest, AnotherUsersSessionSeesNothingOfThisOne) {
  if (GetParam() != Mode::kSystem) GTEST_SKIP() << "only the system moatd serves other users";
  OpenSession a = open_session();
  ASSERT_EQ(a.welcome.value("type", ""), "welcome") << a.welcome.dump() << moatd_log();
  call(*a.client, "c1", "bash",
       {{"command", "echo a-secret > /tmp/mine && touch " + ws_ + "/a-started && exec sleep 37"}});
  ASSERT_TRUE(eventually([&] { return std::filesystem::exists(ws_ + "/a-started"); }))
      << moatd_log();
  const std::string home = dir_.path() + "/nobody";
  std::filesystem::create_directories(home + "/ws");
  ASSERT_EQ(chown(home.c_str(), 65534, 65534), 0);
  ASSERT_EQ(chown((home + "/ws").c_str(), 65534, 65534), 0);
  const e2e::Run b = run({"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                          moat_bin(), "sandbox", "exec", "--connect", socket_, "-C", home + "/ws",
                          "--", "sh", "-c",
                          "cat /tmp/mine 2>/dev/null || echo no-file; "
                          "cat /proc/[0-9]*/cmdline | tr '\\0' ' '"},
                         {"HOME=" + home});
  EXPECT_EQ(b.exit_code, 0) << b.out << moatd_log();
  EXPECT_NE(b.out.find("no-file"), std::string::npos) << b.out;
  EXPECT_EQ(b.out.find("sleep 37"), std::string::npos) << "another user's process\n" << b.out;
  a.client->send_json({{"type", "cancel"}, {"id", "c1"}});
  EXPECT_TRUE(result_of(*a.client, "c1").value("isError", false));
}

INSTANTIATE_TEST_SUITE_P(EveryWayMoatdRuns, MoatdModesTest,
                         ::testing::Values(Mode::kPrivate, Mode::kResident, Mode::kSystem),
                         mode_name);

}  // namespace
}  // namespace moat::e2e
