// tests/integration/e2e/system_moatd_test.cc: the system moatd (issue 30 point 3): the socket
// systemd passes (socket activation, as systemd does it: a listening socket at fd 3, LISTEN_PID
// and LISTEN_FDS), and the shipped unit files as systemd-analyze verify reads them.
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <thread>
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

// moatd.toml's [quota] memory and pids: all of one user's sessions on this moatd together,
// in a parent cgroup of theirs; another user's sessions are not counted. Needs a writable
// cgroup v1 hierarchy (root); UserQuotaTest.AQuotaNoCgroupCanHoldRefusesTheSession is the rest.
class UserQuotaTest : public MoatdProcess {
 protected:
  static constexpr uid_t kOther = 54321;  // not 65534, which root moatd maps the sandbox to

  void SetUp() override {
    std::string why;
    if (!sandbox_available(&why)) GTEST_SKIP() << "a session needs a sandbox: " << why;
    make_workspace();
    ::mkfifo((ws_ + "/release").c_str(), 0666);
  }
  bool cgroups_writable() const {
    return ::access("/sys/fs/cgroup/pids", W_OK) == 0 &&
           ::access("/sys/fs/cgroup/memory", W_OK) == 0;
  }
  void start_with_quota(const std::string& quota) {
    const std::string config = dir_.path() + "/moatd.toml";
    std::ofstream(config) << "[quota]\n" << quota;
    start_moatd(default_policy_flags(), {"MOAT_MOATD_CONFIG=" + config});
    ASSERT_TRUE(eventually([&] { return fs::exists(socket_); })) << moatd_log();
  }
  std::vector<std::string> exec(const std::string& ws, const std::string& script) const {
    return {moat_bin(), "sandbox", "exec", "--connect", socket_, "-C", ws, "--", "sh", "-c",
            script};
  }
  // A session that runs `script`, which writes ./up once it holds its share and then waits
  // until release() (it reads the fifo ./release: no process polls); output in held.log.
  pid_t hold(const std::string& script) {
    const pid_t pid = start(exec(ws_, script), dir_.path() + "/held.log");
    EXPECT_TRUE(eventually([&] { return fs::exists(ws_ + "/up"); })) << read_file(dir_.path() + "/held.log");
    return pid;
  }
  std::string release(pid_t held) {
    UniqueFd w(::open((ws_ + "/release").c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC));
    if (w.valid()) (void)!::write(w.get(), "\n", 1);
    w.reset();
    wait_exit(held, 60);
    return read_file(dir_.path() + "/held.log");
  }
  // The same, as uid kOther in a workspace of theirs.
  e2e::Run run_as_other(const std::string& script) {
    const std::string ws = dir_.path() + "/other", home = dir_.path() + "/other-home";
    fs::create_directories(ws);
    fs::create_directories(home);
    (void)!::chown(ws.c_str(), kOther, kOther);
    (void)!::chown(home.c_str(), kOther, kOther);
    std::vector<std::string> argv = {"setpriv", "--reuid=54321", "--regid=54321",
                                     "--clear-groups"};
    for (const std::string& a : exec(ws, script)) argv.push_back(a);
    return run(argv, {"HOME=" + home});
  }
};

// Thirty sleeps each: one user's two sessions (about 34 processes each) cannot hold 60 at
// once under pids = 50; the second one's fork fails while the first holds its share, and
// succeeds once it ended. Another user's session beside the first is not counted.
TEST_F(UserQuotaTest, PidsBoundTheSumOfAUsersSessionsAndNotAnotherUsers) {
  if (!cgroups_writable()) GTEST_SKIP() << "no writable cgroup v1 pids and memory (root only)";
  start_with_quota("pids = 50\n");
  const std::string thirty = "for i in $(seq 30); do sleep 60 & done";
  const pid_t held = hold(thirty + "; echo > up; read x < release");
  e2e::Run second = run(exec(ws_, thirty + "; echo all-started"));
  EXPECT_EQ(second.out.find("all-started"), std::string::npos) << second.out;
  EXPECT_NE(second.out.find("Cannot fork"), std::string::npos) << second.out;
  if (::getuid() == 0) {
    const e2e::Run other = run_as_other(thirty + "; echo all-started");
    EXPECT_NE(other.out.find("all-started"), std::string::npos)
        << "another user's session was counted: " << other.out << moatd_log();
  }
  release(held);
  EXPECT_TRUE(eventually([&] {
    return run(exec(ws_, thirty + "; echo all-started")).out.find("all-started") !=
           std::string::npos;
  })) << "the user's share did not come back when their first session ended" << moatd_log();
}

// One allocation of 64 MiB, zero-filled (so every page is touched); with "hold", held until
// the test releases it.
constexpr const char* kFill = R"(vec($s, (64 << 20) - 1, 8) = 1;
print "filled\n";
if (@ARGV) { open(U, ">up"); close U; open(R, "<release"); <R>; print "first-alive\n"; }
)";

// memory = 100M: a session holding 64 MiB leaves another of the same user no room for 64 MiB
// more (the cgroup's OOM killer ends one of the two), while another user's does fit.
TEST_F(UserQuotaTest, MemoryBoundsTheSumOfAUsersSessions) {
  if (!cgroups_writable()) GTEST_SKIP() << "no writable cgroup v1 pids and memory (root only)";
  start_with_quota("memory = \"100M\"\n");
  std::ofstream(ws_ + "/fill.pl") << kFill;
  const pid_t held = hold("perl fill.pl hold");
  if (::getuid() == 0) {  // first: the user's held 64 MiB leave another user's 64 MiB alone
    fs::create_directories(dir_.path() + "/other");
    std::ofstream(dir_.path() + "/other/fill.pl") << kFill;
    const e2e::Run other = run_as_other("perl fill.pl");
    EXPECT_NE(other.out.find("filled"), std::string::npos) << other.out << moatd_log();
  }
  const e2e::Run second = run(exec(ws_, "perl fill.pl"));
  const std::string first = release(held);
  const bool both = second.out.find("filled") != std::string::npos &&
                    first.find("first-alive") != std::string::npos;
  EXPECT_FALSE(both) << "two sessions of one user held 128 MiB under memory = 100M:\n"
                     << first << "\n" << second.out;
  EXPECT_TRUE(eventually([&] {
    return run(exec(ws_, "perl fill.pl")).out.find("filled") != std::string::npos;
  })) << "the user's share did not come back when their first session ended";
}

// Without a memory or pids quota a pooled session is no user's: the one built after root's
// hello serves another user's (session.start's sandbox says pooled). With one, each user's
// pooled sessions are in their parent cgroup, so only that user's hello takes them.
TEST_F(UserQuotaTest, WithoutAQuotaAPooledSessionServesAnotherUser) {
  if (::getuid() != 0) GTEST_SKIP() << "a second user's hello needs root";
  start_with_quota("sessions = 8\n");
  // Whether a session.start of `uid` says its session was a pooled one.
  const auto pooled_for = [&](uid_t uid) {
    bool pooled = false;
    for (const auto& entry : fs::recursive_directory_iterator(dir_.path() + "/audit"))
      if (entry.is_regular_file() && entry.path().extension() == ".jsonl")
        for (const auto& start : of_type(records_of(entry.path().string()), "session.start"))
          pooled = pooled || (start["peer"].value("uid", -1) == static_cast<int>(uid) &&
                              start["sandbox"].value("pooled", false));
    return pooled;
  };
  // Root's hellos until one is served by the pool: it is built for root's sessions now.
  ASSERT_TRUE(eventually([&] {
    return run(exec(ws_, "true")).exit_code == 0 && pooled_for(0);
  })) << moatd_log();
  std::this_thread::sleep_for(std::chrono::seconds(1));  // the refill: 50 ms after a hello
  ASSERT_EQ(run_as_other("true").exit_code, 0) << moatd_log();
  EXPECT_TRUE(pooled_for(kOther)) << "uid " << kOther << "'s one hello was built fresh";
}

// A moatd that cannot make cgroups (rootless: uid 65534 in CI) refuses a session under a
// memory or pids quota, naming the quota's file, the layer and what to do: a quota must not
// bound nothing. With --allow-without cgroup the operator lets sessions run without it.
TEST_F(UserQuotaTest, AQuotaNoCgroupCanHoldRefusesTheSession) {
  if (cgroups_writable())
    GTEST_SKIP() << "cgroups are writable here: the refusal is a rootless moatd's (uid 65534)";
  start_with_quota("pids = 100\n");
  e2e::Run r = run(exec(ws_, "echo ran"));
  EXPECT_NE(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out.find("ran"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("cgroup: [quota] memory and pids in " + dir_.path() + "/moatd.toml" +
                       " cannot be held for uid " + std::to_string(::getuid())),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("--allow-without cgroup"), std::string::npos) << r.out;
  stop_moatd();
  std::vector<std::string> flags = default_policy_flags();
  flags.insert(flags.end(), {"--allow-without", "cgroup"});
  start_moatd(flags, {"MOAT_MOATD_CONFIG=" + dir_.path() + "/moatd.toml"});
  ASSERT_TRUE(eventually([&] { return fs::exists(socket_); })) << moatd_log();
  r = run(exec(ws_, "echo ran"));
  EXPECT_NE(r.out.find("ran"), std::string::npos) << r.out << moatd_log();
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
