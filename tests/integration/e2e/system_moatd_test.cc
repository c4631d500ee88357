// tests/integration/e2e/system_moatd_test.cc: the system moatd (issue 30 point 3): the socket
// systemd passes (socket activation, as systemd does it: a listening socket at fd 3, LISTEN_PID
// and LISTEN_FDS), and the shipped unit files as systemd-analyze verify reads them.
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/unique_fd.h"
#include "moatd_fixture.h"

namespace moat::e2e {
namespace {

namespace fs = std::filesystem;

// A Unix socket bound at `path`; listening unless `listen_too` is false.
UniqueFd bound_socket(const std::string& path, int type, bool listen_too) {
  UniqueFd fd(::socket(AF_UNIX, type | SOCK_CLOEXEC, 0));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  path.copy(addr.sun_path, sizeof addr.sun_path - 1);
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return UniqueFd();
  if (listen_too && ::listen(fd.get(), 16) != 0) return UniqueFd();
  return fd;
}

// What systemd's activation variables say in the child: `pid_of_child` makes LISTEN_PID the
// child's own pid (as systemd sets it), else the test's (another process).
struct Activation {
  bool pid_of_child = true;
  std::string fds = "1";
};

class SystemMoatdTest : public MoatdProcess {
 protected:
  // Starts moatd as systemd would: `passed` at fd 3 (not close-on-exec), LISTEN_PID and
  // LISTEN_FDS set, then `flags`; its output goes to moatd.log.
  pid_t start_activated(int passed, const Activation& a, const std::vector<std::string>& flags) {
    std::vector<std::string> argv = {moatd_bin()};
    argv.insert(argv.end(), flags.begin(), flags.end());
    const std::string log = dir_.path() + "/moatd.log";
    const std::string test_pid = std::to_string(::getpid());
    const pid_t pid = ::fork();
    if (pid == 0) {
      // Out of the way first: `passed` or the log may hold fd 3 themselves.
      const int held = ::fcntl(passed, F_DUPFD_CLOEXEC, 10);
      const int out = ::fcntl(::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644),
                              F_DUPFD_CLOEXEC, 10);
      ::dup2(out, 1);
      ::dup2(out, 2);
      ::dup2(held, 3);  // the copy is not close-on-exec, as systemd passes it
      const std::string listen_pid = a.pid_of_child ? std::to_string(::getpid()) : test_pid;
      ::setenv("LISTEN_PID", listen_pid.c_str(), 1);
      ::setenv("LISTEN_FDS", a.fds.c_str(), 1);
      std::vector<char*> args;
      for (auto& s : argv) args.push_back(s.data());
      args.push_back(nullptr);
      ::execv(args[0], args.data());
      ::_exit(127);
    }
    return pid;
  }

  // Runs moatd with `passed` at fd 3 to its exit; its exit code, with its output in *log.
  int refused(int passed, const Activation& a, std::string* log,
              const std::vector<std::string>& flags = {}) {
    const pid_t pid = start_activated(passed, a, flags);
    const int code = wait_exit(pid, 20);
    *log = moatd_log();
    return code;
  }
};

TEST_F(SystemMoatdTest, ServesTheSocketSystemdPassesAndLeavesItsPath) {
  std::string why;
  if (!sandbox_available(&why)) GTEST_SKIP() << "a session needs a sandbox: " << why;
  make_workspace();
  socket_ = dir_.path() + "/system.sock";
  UniqueFd listening = bound_socket(socket_, SOCK_STREAM, true);
  ASSERT_TRUE(listening.valid());
  pid_ = start_activated(listening.get(), Activation{}, default_policy_flags());
  // The socket listens before moatd runs (systemd's point): a client may connect at once.
  const e2e::Run r =
      run({moat_bin(), "sandbox", "exec", "--connect", socket_, "-C", ws_, "--", "echo", "served"});
  EXPECT_EQ(r.exit_code, 0) << r.out << moatd_log();
  EXPECT_NE(r.out.find("served"), std::string::npos) << r.out;
  EXPECT_NE(moatd_log().find("listening on " + socket_), std::string::npos) << moatd_log();
  stop_moatd();
  // systemd owns the path: moatd leaves it for the next activation.
  EXPECT_TRUE(fs::exists(socket_)) << "moatd removed the path systemd bound";
}

TEST_F(SystemMoatdTest, RefusesActivationVariablesMeantForAnotherProcessOrMoreSockets) {
  UniqueFd listening = bound_socket(dir_.path() + "/s.sock", SOCK_STREAM, true);
  ASSERT_TRUE(listening.valid());
  std::string log;
  EXPECT_EQ(refused(listening.get(), Activation{false, "1"}, &log), 2);
  EXPECT_NE(log.find("LISTEN_PID=" + std::to_string(::getpid()) + " is not this process"),
            std::string::npos)
      << log;
  EXPECT_EQ(refused(listening.get(), Activation{true, "2"}, &log), 2);
  EXPECT_NE(log.find("LISTEN_FDS=2: moatd takes exactly one socket"), std::string::npos) << log;
  EXPECT_EQ(refused(listening.get(), Activation{true, "one"}, &log), 2);
  EXPECT_NE(log.find("LISTEN_FDS=one is not a positive decimal number"), std::string::npos) << log;
  EXPECT_EQ(refused(listening.get(), Activation{}, &log, {"--socket", dir_.path() + "/x.sock"}), 2);
  EXPECT_NE(log.find("takes neither --socket nor --fd"), std::string::npos) << log;
}

TEST_F(SystemMoatdTest, RefusesAnFd3ThatIsNotAListeningUnixStreamSocket) {
  const std::string expected = "fd 3 from systemd is not a listening AF_UNIX SOCK_STREAM socket";
  std::string log;
  UniqueFd datagram = bound_socket(dir_.path() + "/d.sock", SOCK_DGRAM, false);
  UniqueFd not_listening = bound_socket(dir_.path() + "/n.sock", SOCK_STREAM, false);
  UniqueFd tcp(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  ASSERT_EQ(::listen(tcp.get(), 1), 0);
  for (int fd : {datagram.get(), not_listening.get(), tcp.get()}) {
    EXPECT_EQ(refused(fd, Activation{}, &log), 2);
    EXPECT_NE(log.find(expected), std::string::npos) << log;
  }
  std::ofstream(dir_.path() + "/file") << "x";
  UniqueFd file(::open((dir_.path() + "/file").c_str(), O_RDONLY | O_CLOEXEC));
  EXPECT_EQ(refused(file.get(), Activation{}, &log), 2);
  EXPECT_NE(log.find("fd 3 from systemd, SO_DOMAIN"), std::string::npos) << log;
}

// moatd.toml's [quota] sessions counts sessions from their hello (an interactive session's
// console connection is none: ResidentAttackTest): a user's third hello over a quota of 2 is
// refused with an error frame naming the quota and its file; connections that have not said
// hello are bounded only by the 64 per user (MoatdBounds); a session ending frees its place.
TEST_F(SystemMoatdTest, AThirdSessionOverAQuotaOfTwoIsRefusedNamingTheQuota) {
  std::string why;
  if (!sandbox_available(&why)) GTEST_SKIP() << why;
  const std::string config = dir_.path() + "/moatd.toml";
  std::ofstream(config) << "[quota]\nsessions = 2\n";
  start_moatd(default_policy_flags(), {"MOAT_MOATD_CONFIG=" + config});
  ASSERT_TRUE(eventually([&] { return fs::exists(socket_); })) << moatd_log();
  make_workspace();
  auto hello = [&](RawClient& c) {
    c.send_json({{"type", "hello"}, {"version", 1}, {"workspace", ws_}, {"headless", true}});
    return c.read_frame();
  };
  RawClient first(socket_), second(socket_), waiting(socket_), third(socket_);
  ASSERT_EQ(hello(first).value("type", ""), "welcome") << moatd_log();
  ASSERT_EQ(hello(second).value("type", ""), "welcome") << moatd_log();
  const nlohmann::json refusal = hello(third);
  EXPECT_EQ(refusal.value("type", ""), "error") << refusal.dump();
  EXPECT_EQ(refusal.value("code", ""), "quota") << refusal.dump();
  EXPECT_NE(refusal.value("message", "").find("quota.sessions = 2 in " + config + ": uid " +
                                              std::to_string(::getuid()) + " has 2 sessions open"),
            std::string::npos)
      << refusal.dump();
  EXPECT_TRUE(third.closed_by_peer());
  // `waiting`, accepted beside two sessions, holds none: it was not refused.
  EXPECT_TRUE(waiting.read_frame(300).is_null());
  // A session's place is free once moatd has ended it (after its bye).
  first.send_json({{"type", "bye"}});
  ASSERT_EQ(first.read_frame().value("type", ""), "bye") << moatd_log();
  EXPECT_TRUE(eventually([&] {
    RawClient next(socket_);
    return hello(next).value("type", "") == "welcome";
  })) << moatd_log();
}

// A moatd.toml that does not parse stops moatd at start, naming file:line:col and the key: a
// typo must not leave a quota unset.
TEST_F(SystemMoatdTest, AMisspelledQuotaStopsMoatdNamingTheFileLineAndKey) {
  const std::string config = dir_.path() + "/moatd.toml";
  std::ofstream(config) << "[quota]\nsessoins = 2\n";
  start_moatd(default_policy_flags(), {"MOAT_MOATD_CONFIG=" + config});
  EXPECT_EQ(wait_exit(pid_, 20), 2);
  pid_ = -1;
  EXPECT_NE(moatd_log().find(config + ":2:1: quota.sessoins"), std::string::npos) << moatd_log();
}

// moatd.toml's [system] socket: moat uses the operator's moatd without --connect (its session
// lands in that moatd's audit folder); a file that does not parse stops moat naming it; a
// configured moatd that does not answer leaves the person a private one, with a notice.
TEST_F(SystemMoatdTest, MoatUsesTheSystemMoatdTheOperatorConfigured) {
  std::string why;
  if (!sandbox_available(&why)) GTEST_SKIP() << "a session needs a sandbox: " << why;
  make_workspace();
  start_moatd(default_policy_flags());
  ASSERT_TRUE(eventually([&] { return fs::exists(socket_); })) << moatd_log();
  const std::string config = dir_.path() + "/moatd.toml";
  std::ofstream(config) << "[system]\nsocket = \"" << socket_ << "\"\n";
  const std::vector<std::string> env = {"MOAT_MOATD_CONFIG=" + config};
  const std::vector<std::string> exec = {moat_bin(), "sandbox", "exec", "-C", ws_, "--", "true"};
  e2e::Run r = run(exec, env);
  EXPECT_EQ(r.exit_code, 0) << r.out << moatd_log();
  EXPECT_TRUE(fs::exists(dir_.path() + "/audit") && !fs::is_empty(dir_.path() + "/audit"))
      << "the session is not in the system moatd's audit folder: " << r.out;
  stop_moatd();
  r = run(exec, env);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("the system moatd (" + socket_ + ") does not answer"), std::string::npos)
      << r.out;
  std::ofstream(config) << "[system]\nsockte = \"/x\"\n";
  r = run(exec, env);
  EXPECT_NE(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find(config + ":2:1"), std::string::npos) << r.out;
}

// The shipped units, as systemd reads them: unknown keys, a missing Listen setting or a
// command that is not there all fail the check. The unit names the installed moatd; the copy
// checked here names the built one (verify requires the command to exist).
TEST(SystemdUnits, VerifyWithoutAWord) {
  if (::access("/usr/bin/systemd-analyze", X_OK) != 0)
    GTEST_SKIP() << "systemd-analyze is not installed (package systemd)";
  TempDir dir;
  const std::string units = source_root() + "/dist/systemd";
  fs::copy(units + "/moatd.socket", dir.path() + "/moatd.socket");
  std::string service = read_file(units + "/moatd.service");
  const std::string installed = "ExecStart=/usr/local/bin/moatd\n";
  ASSERT_NE(service.find(installed), std::string::npos) << service;
  service.replace(service.find(installed), installed.size(), "ExecStart=" + moatd_bin() + "\n");
  std::ofstream(dir.path() + "/moatd.service") << service;
  const e2e::Run r = run({"/usr/bin/systemd-analyze", "verify", dir.path() + "/moatd.socket",
                     dir.path() + "/moatd.service"});
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out, "") << "systemd-analyze verify warns";
}

}  // namespace
}  // namespace moat::e2e
