// tests/integration/sandbox/probes_test.cc: moat_probe inside a worker, one escape per test,
// asserting the exact outcome; one test per deny-table row; host-side canaries.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <seccomp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

#include "sandbox/seccomp_sets.h"
#include "tests/integration/sandbox/test_util.h"
#include "tests/support/sensitive_syscalls.h"

namespace moat::sandbox {
namespace {

using testing::TempDir;

// One session per suite: probes are cheap, sessions are not free.
class ProbeTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ws_ = new TempDir();
    testing::install_probe(*ws_);
    SessionConfig c;
    c.workspace = ws_->path();
    auto made = Session::create(c);
    if (made) session_ = made->release();
    else skip_reason_ = new std::string(made.error().message());
  }
  static void TearDownTestSuite() {
    delete session_;
    delete ws_;
    delete skip_reason_;
    session_ = nullptr;
    ws_ = nullptr;
    skip_reason_ = nullptr;
  }
  void SetUp() override {
    if (session_ == nullptr) GTEST_SKIP() << "no sandbox session here: " << *skip_reason_;
  }
  std::string probe(std::vector<std::string> args) { return testing::probe(*session_, *ws_, args); }

  static TempDir* ws_;
  static Session* session_;
  static std::string* skip_reason_;
};
TempDir* ProbeTest::ws_ = nullptr;
Session* ProbeTest::session_ = nullptr;
std::string* ProbeTest::skip_reason_ = nullptr;

std::string nr(const char* name) { return std::to_string(seccomp_syscall_resolve_name(name)); }

TEST_F(ProbeTest, Clone3FailsWithEnosys) {
  EXPECT_EQ(probe({"syscall", nr("clone3"), "0", "0"}), "ENOSYS");
}
TEST_F(ProbeTest, UnshareUserFailsWithEperm) {
  EXPECT_EQ(probe({"syscall", nr("unshare"), std::to_string(CLONE_NEWUSER)}), "EPERM");
}
TEST_F(ProbeTest, UnshareNetFailsWithEperm) {
  EXPECT_EQ(probe({"syscall", nr("unshare"), std::to_string(CLONE_NEWNET)}), "EPERM");
}
TEST_F(ProbeTest, UnshareWithoutNamespaceFlagsIsAllowed) {
  EXPECT_EQ(probe({"syscall", nr("unshare"), std::to_string(CLONE_FILES)}), "ok");
}
TEST_F(ProbeTest, CloneWithNamespaceFlagFailsWithEperm) {
  // The stack pointer is bad: an allowed clone would fail with EFAULT or crash the child.
  EXPECT_EQ(probe({"syscall", nr("clone"), std::to_string(CLONE_NEWPID | SIGCHLD), "-1"}), "EPERM");
}
TEST_F(ProbeTest, SetnsBadFdFailsWithEpermNotEbadf) {
  EXPECT_EQ(probe({"syscall", nr("setns"), "-1", "0"}), "EPERM");
}
TEST_F(ProbeTest, MountBadPointerFailsWithEpermNotEfault) {
  EXPECT_EQ(probe({"syscall", nr("mount"), "-1", "-1", "-1", "0", "0"}), "EPERM");
}
TEST_F(ProbeTest, IoUringSetupFailsWithEperm) {
  EXPECT_EQ(probe({"syscall", nr("io_uring_setup"), "1", "-1"}), "EPERM");
}
TEST_F(ProbeTest, TiocstiFailsWithEpermOnABadFd) {
  EXPECT_EQ(probe({"ioctl", std::to_string(TIOCSTI)}), "EPERM");
}
TEST_F(ProbeTest, TiocstiWithHighBitsSetFailsWithEperm) {
  EXPECT_EQ(probe({"ioctl", std::to_string((1UL << 32) | TIOCSTI)}), "EPERM");
}
TEST_F(ProbeTest, TioclinuxFailsWithEperm) {
  EXPECT_EQ(probe({"ioctl", std::to_string(TIOCLINUX)}), "EPERM");
}
TEST_F(ProbeTest, OtherIoctlReachesTheKernel) {
  EXPECT_EQ(probe({"ioctl", std::to_string(TIOCGWINSZ)}), "EBADF");
}
TEST_F(ProbeTest, PersonalityQueryAndLinuxAreAllowed) {
  EXPECT_EQ(probe({"personality", "0xffffffff"}), "ok");
  EXPECT_EQ(probe({"personality", "0"}), "ok");
}
TEST_F(ProbeTest, PersonalityAddrNoRandomizeFailsWithEperm) {
  EXPECT_EQ(probe({"personality", "0x0040000"}), "EPERM");
  EXPECT_EQ(probe({"personality", "0x80000001"}), "EPERM");
}
TEST_F(ProbeTest, UnixSocketsAreAllowed) {
  EXPECT_EQ(probe({"socket", std::to_string(AF_UNIX)}), "ok");
}
TEST_F(ProbeTest, InetWithoutNetworkFailsWithEafnosupport) {
  EXPECT_EQ(probe({"socket", std::to_string(AF_INET)}), "EAFNOSUPPORT");
  EXPECT_EQ(probe({"socket", std::to_string(AF_INET6)}), "EAFNOSUPPORT");
  EXPECT_EQ(probe({"socketpair", std::to_string(AF_INET)}), "EAFNOSUPPORT");
}
TEST_F(ProbeTest, NetlinkPacketAlgVsockFailWithEafnosupport) {
  for (int family : {AF_NETLINK, AF_PACKET, AF_ALG, AF_VSOCK, 100})
    EXPECT_EQ(probe({"socket", std::to_string(family)}), "EAFNOSUPPORT") << family;
}
TEST_F(ProbeTest, X32SyscallKillsTheProcess) {
  EXPECT_EQ(probe({"x32"}), "signal:" + std::to_string(SIGSYS));
}
// The probe run on the host, outside any sandbox: its wait status.
int probe_on_host(const std::vector<const char*>& args) {
  const std::string exe = testing::probe_binary();
  std::vector<const char*> argv = {exe.c_str()};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.push_back(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    int null_fd = open("/dev/null", O_WRONLY);
    dup2(null_fd, 1);
    dup2(null_fd, 2);
    execv(argv[0], const_cast<char* const*>(argv.data()));
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return status;
}

TEST_F(ProbeTest, Int80SyscallKillsTheProcess) {
  // Some hypervisors (the 2-vCPU VM this suite was last run on, for one) do not deliver int 0x80 to
  // the kernel's i386 entry at all: the instruction faults (SIGSEGV) before any filter could see
  // it.
  const int host = probe_on_host({"int80"});
  if (WIFSIGNALED(host))
    GTEST_SKIP() << "int 0x80 dies with signal " << WTERMSIG(host) << " on this host already";
  EXPECT_EQ(probe({"int80"}), "signal:" + std::to_string(SIGSYS));
}
TEST_F(ProbeTest, OpenAt2FailsWithEnosys) {
  EXPECT_EQ(probe({"syscall", nr("openat2"), "-1", "0", "0", "0"}), "ENOSYS");
}
TEST_F(ProbeTest, UnknownSyscallNumberFailsWithEnosys) {
  EXPECT_EQ(probe({"syscall", "499"}), "ENOSYS");
}

TEST_F(ProbeTest, NoSetuidOrSetgidFileCanBeMade) {
  EXPECT_EQ(probe({"setuid-file", ws_->file("suid")}), "create EPERM\nchmod EPERM\nchmod-g EPERM");
  for (const auto& e : std::filesystem::recursive_directory_iterator(ws_->path())) {
    struct stat st;
    ASSERT_EQ(lstat(e.path().c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & (S_ISUID | S_ISGID), 0u) << e.path();
  }
}

TEST_F(ProbeTest, InitEnvironmentAndMemoryAreUnreadable) {
  auto r = testing::sh(*session_, "cat /proc/1/environ; cat /proc/1/maps; ls /proc/1/fd");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->output.find("PATH"), std::string::npos) << r->output;
  EXPECT_NE(r->output.find("Permission denied"), std::string::npos) << r->output;
}

// The init is a fork of its creator (moatd, here the test binary): its /proc/1/cmdline, which
// every process of the session can read, is a neutral name, not its creator's argv.
TEST_F(ProbeTest, InitCmdlineIsANeutralName) {
  auto r = testing::sh(*session_, "tr -d '\\000' < /proc/1/cmdline; echo; cat /proc/1/comm");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->output, "moat-init\nmoat-init\n");
}

// One test per deny-table row: the syscall fails with its set's errno. All arguments are -1
// (a bad fd and a bad pointer) then zeros, which no listed syscall accepts.
struct DenyRow {
  std::string set, name;
  int err;
};
std::vector<DenyRow> deny_rows() {
  std::vector<DenyRow> rows;
  for (const auto& set : syscall_sets())
    if (set.action == SetAction::kErrno)
      for (const auto& e : set.entries) rows.push_back({set.name, e.name, set.errno_value});
  for (const auto& e : named_exceptions()) rows.push_back({"exception", e.name, e.errno_value});
  return rows;
}

class SeccompDenyRow : public ProbeTest, public ::testing::WithParamInterface<DenyRow> {};

TEST_P(SeccompDenyRow, FailsWithTheSetsErrno) {
  const DenyRow& row = GetParam();
  EXPECT_EQ(probe({"syscall", nr(row.name.c_str()), "-1"}), strerrorname_np(row.err));
}
INSTANTIATE_TEST_SUITE_P(AllRows, SeccompDenyRow, ::testing::ValuesIn(deny_rows()),
                         [](const auto& info) { return info.param.set + "_" + info.param.name; });

// The kernel's handle, key, namespace, clock, LSM and quota syscalls, by number (so also those
// libseccomp cannot name): each fails with its exact errno whatever its arguments (clone and
// unshare: whenever a namespace flag is set).
class SensitiveSyscallProbe
    : public ProbeTest,
      public ::testing::WithParamInterface<moat::testing::SensitiveSyscall> {};

TEST_P(SensitiveSyscallProbe, FailsWithItsErrno) {
  const auto& s = GetParam();
  EXPECT_EQ(probe({"syscall", std::to_string(s.nr), "-1"}), strerrorname_np(s.err));
  if (!s.by_flags) {
    EXPECT_EQ(probe({"syscall", std::to_string(s.nr), "0"}), strerrorname_np(s.err));
  }
}
INSTANTIATE_TEST_SUITE_P(Kernel, SensitiveSyscallProbe,
                         ::testing::ValuesIn(moat::testing::kSensitiveSyscalls),
                         [](const auto& info) { return std::string(info.param.name); });

// With real arguments (an existing file, a buffer large enough): the filter answers, not the
// argument checks.
TEST_F(ProbeTest, NameToHandleAtOnARealFileFailsWithEperm) {
  EXPECT_EQ(probe({"file-handle", ws_->file("moat_probe")}), "name EPERM\nopen EPERM");
}

// bwrap's trick, checked: without the filter the same probes reach the kernel and fail
// differently (EBADF, EFAULT, EINVAL) or succeed, so the errnos above come from the filter.
TEST(SeccompFilter, WithoutItTheSameProbesGetTheKernelsAnswer) {
  TempDir ws;
  testing::install_probe(ws);
  SessionConfig c;
  c.workspace = ws.path();
  c.test_skip_step = "seccomp";
  MOAT_SESSION_OR_SKIP(s, c);
  EXPECT_EQ(testing::probe(s, ws, {"syscall", nr("setns"), "-1", "0"}), "EBADF");
  EXPECT_EQ(testing::probe(s, ws, {"ioctl", std::to_string(TIOCSTI)}), "EBADF");
  EXPECT_EQ(testing::probe(s, ws, {"socket", std::to_string(AF_NETLINK)}), "ok");
  EXPECT_NE(testing::probe(s, ws, {"syscall", nr("clone3"), "0", "0"}), "ENOSYS");
  EXPECT_NE(testing::probe(s, ws, {"syscall", nr("mount"), "-1", "-1", "-1", "0", "0"}), "EPERM");
  // The exec watch's own filter also kills other ABIs: an execve through int 0x80 or x32
  // would otherwise pass it unseen.
  EXPECT_EQ(testing::probe(s, ws, {"x32"}), "signal:31");
  // name_to_handle_at works on the workspace's filesystem; opening the handle needs
  // CAP_DAC_READ_SEARCH in the initial namespace, which no worker has.
  EXPECT_EQ(testing::probe(s, ws, {"file-handle", ws.file("moat_probe")}), "name ok\nopen EPERM");
}

// Host-side canaries: nothing the sandbox does reaches a listener on the host's loopback or
// an abstract unix socket in the host's network namespace.
TEST(Canary, HostLoopbackListenerSeesNothing) {
  UniqueFd listener(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  ASSERT_TRUE(listener.valid());
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(listener.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  socklen_t len = sizeof addr;
  ASSERT_EQ(getsockname(listener.get(), reinterpret_cast<sockaddr*>(&addr), &len), 0);
  ASSERT_EQ(listen(listener.get(), 8), 0);
  const std::string port = std::to_string(ntohs(addr.sin_port));
  TempDir ws;
  testing::install_probe(ws);
  SessionConfig off, on;
  off.workspace = on.workspace = ws.path();
  on.network = true;
  MOAT_SESSION_OR_SKIP(s_off, off);
  MOAT_SESSION_OR_SKIP(s_on, on);
  EXPECT_EQ(testing::probe(s_off, ws, {"connect", "127.0.0.1", port}), "EAFNOSUPPORT");
  // With network granted the socket exists, but 127.0.0.1 is the session's own loopback.
  EXPECT_EQ(testing::probe(s_on, ws, {"connect", "127.0.0.1", port}), "ECONNREFUSED");
  pollfd p{listener.get(), POLLIN, 0};
  EXPECT_EQ(poll(&p, 1, 200), 0) << "the host listener saw a connection";
}

TEST(Canary, HostAbstractUnixSocketIsUnreachable) {
  const std::string name = "moat-canary-" + std::to_string(getpid());
  UniqueFd server(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path + 1, name.data(), name.size());
  socklen_t len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  ASSERT_EQ(bind(server.get(), reinterpret_cast<sockaddr*>(&addr), len), 0);
  ASSERT_EQ(listen(server.get(), 8), 0);
  TempDir ws;
  testing::install_probe(ws);
  SessionConfig c;
  c.workspace = ws.path();
  MOAT_SESSION_OR_SKIP(s, c);
  EXPECT_EQ(testing::probe(s, ws, {"abstract", name}), "ECONNREFUSED");
  pollfd p{server.get(), POLLIN, 0};
  EXPECT_EQ(poll(&p, 1, 100), 0);
}

TEST(Canary, FilesOutsideTheWorkspaceAreUnchanged) {
  TempDir ws, outside;
  outside.write("canary.txt", "original\n");
  SessionConfig c;
  c.workspace = ws.path();
  MOAT_SESSION_OR_SKIP(s, c);
  const std::string f = outside.file("canary.txt");
  auto r = testing::sh(s, "echo changed > " + f + "; rm -f " + f + "; ls " + outside.path() +
                              "; echo changed > /proc/1/root" + f + "; true");
  ASSERT_TRUE(r);
  EXPECT_EQ(outside.read("canary.txt"), "original\n");
  EXPECT_NE(r->output.find("No such file or directory"), std::string::npos) << r->output;
}

}  // namespace
}  // namespace moat::sandbox
