// tests/unit/base/sys_test.cc: base/sys.h, the generic syscall wrappers.
#include "base/sys.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace moat {
namespace {

bool is_cloexec(int fd) { return (::fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0; }

// A mkdtemp directory removed with its contents at scope end.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "moat-sys-XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data()) != nullptr ? tmpl : "";
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(Sys, MakePipeGivesCloseOnExecEndsThatCarryBytes) {
  auto p = sys::make_pipe();
  ASSERT_TRUE(p) << p.error().message();
  EXPECT_TRUE(is_cloexec(p->first.get()));
  EXPECT_TRUE(is_cloexec(p->second.get()));
  ASSERT_TRUE(sys::write_all(p->second.get(), "ab", 2));
  p->second.reset();
  auto text = sys::read_to_end(p->first.get(), 16);
  ASSERT_TRUE(text) << text.error().message();
  EXPECT_EQ(*text, "ab");
}

TEST(Sys, MakeSocketpairGivesCloseOnExecEndsConnectedBothWays) {
  auto p = sys::make_socketpair(SOCK_STREAM);
  ASSERT_TRUE(p) << p.error().message();
  EXPECT_TRUE(is_cloexec(p->first.get()));
  EXPECT_TRUE(is_cloexec(p->second.get()));
  ASSERT_TRUE(sys::write_all(p->first.get(), "x", 1));
  ASSERT_TRUE(sys::write_all(p->second.get(), "y", 1));
  char a = 0, b = 0;
  ASSERT_TRUE(sys::read_exact(p->second.get(), &a, 1, false));
  ASSERT_TRUE(sys::read_exact(p->first.get(), &b, 1, false));
  EXPECT_EQ(a, 'x');
  EXPECT_EQ(b, 'y');
}

TEST(Sys, MakeSocketIsCloseOnExecAndKeepsTheTypeFlags) {
  auto s = sys::make_socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK);
  ASSERT_TRUE(s) << s.error().message();
  EXPECT_TRUE(is_cloexec(s->get()));
  EXPECT_NE(::fcntl(s->get(), F_GETFL) & O_NONBLOCK, 0);
}

TEST(Sys, MakeSocketOfAnUnknownFamilyFailsWithEafnosupport) {
  auto s = sys::make_socket(12345, SOCK_STREAM);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, EAFNOSUPPORT);
}

TEST(Sys, OpenPathIsCloseOnExecAndCreatesWithTheMode) {
  TempDir dir;
  const std::string path = dir.path() + "/f";
  auto fd = sys::open_path(path, O_WRONLY | O_CREAT | O_EXCL, 0640);
  ASSERT_TRUE(fd) << fd.error().message();
  EXPECT_TRUE(is_cloexec(fd->get()));
  struct stat st {};
  ASSERT_EQ(::fstat(fd->get(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777 & ~0640u, 0u);
}

TEST(Sys, OpenPathOfAMissingFileFailsWithEnoentNamingThePath) {
  TempDir dir;
  auto fd = sys::open_path(dir.path() + "/missing", O_RDONLY);
  ASSERT_FALSE(fd);
  EXPECT_EQ(fd.error().code, ENOENT);
  EXPECT_EQ(fd.error().context, "open(" + dir.path() + "/missing)");
}

TEST(Sys, OpenBeneathOpensAPathInsideTheRoot) {
  TempDir dir;
  ASSERT_EQ(::mkdir((dir.path() + "/sub").c_str(), 0755), 0);
  auto root = sys::open_path(dir.path(), O_PATH | O_DIRECTORY);
  ASSERT_TRUE(root);
  auto fd = sys::open_beneath(root->get(), "sub", O_PATH | O_DIRECTORY, true);
  ASSERT_TRUE(fd) << fd.error().message();
  EXPECT_TRUE(is_cloexec(fd->get()));
}

TEST(Sys, OpenBeneathRefusesDotDotOutOfTheRootWithExdev) {
  TempDir dir;
  auto root = sys::open_path(dir.path(), O_PATH | O_DIRECTORY);
  ASSERT_TRUE(root);
  auto fd = sys::open_beneath(root->get(), "../", O_PATH, false);
  ASSERT_FALSE(fd);
  EXPECT_EQ(fd.error().code, EXDEV);
  EXPECT_EQ(fd.error().context, "openat2(../)");
}

TEST(Sys, OpenBeneathRefusesASymlinkWithEloopOnlyWhenAsked) {
  TempDir dir;
  ASSERT_EQ(::mkdir((dir.path() + "/real").c_str(), 0755), 0);
  ASSERT_EQ(::symlink("real", (dir.path() + "/link").c_str()), 0);
  auto root = sys::open_path(dir.path(), O_PATH | O_DIRECTORY);
  ASSERT_TRUE(root);
  auto refused = sys::open_beneath(root->get(), "link", O_PATH | O_DIRECTORY, true);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ELOOP);
  EXPECT_TRUE(sys::open_beneath(root->get(), "link", O_PATH | O_DIRECTORY, false));
}

TEST(Sys, OpenNoSymlinksRefusesASymlinkAnywhereInThePathWithEloop) {
  TempDir dir;
  ASSERT_EQ(::mkdir((dir.path() + "/real").c_str(), 0755), 0);
  ASSERT_EQ(::mkdir((dir.path() + "/real/in").c_str(), 0755), 0);
  ASSERT_EQ(::symlink("real", (dir.path() + "/link").c_str()), 0);
  EXPECT_TRUE(sys::open_no_symlinks(dir.path() + "/real/in", O_PATH | O_DIRECTORY));
  for (const char* rel : {"/link", "/link/in"}) {
    auto fd = sys::open_no_symlinks(dir.path() + rel, O_PATH | O_DIRECTORY);
    ASSERT_FALSE(fd) << rel;
    EXPECT_EQ(fd.error().code, ELOOP) << rel;
  }
}

TEST(Sys, DuplicateGivesACloseOnExecFdForTheSameOpenFile) {
  auto p = sys::make_pipe();
  ASSERT_TRUE(p);
  ASSERT_EQ(::fcntl(p->second.get(), F_SETFD, 0), 0);
  auto dup = sys::duplicate(p->second.get());
  ASSERT_TRUE(dup) << dup.error().message();
  EXPECT_TRUE(is_cloexec(dup->get()));
  p->second.reset();
  ASSERT_TRUE(sys::write_all(dup->get(), "z", 1));
  char c = 0;
  ASSERT_TRUE(sys::read_exact(p->first.get(), &c, 1, false));
  EXPECT_EQ(c, 'z');
}

TEST(Sys, DuplicateOfAClosedFdFailsWithEbadf) {
  auto dup = sys::duplicate(-1);
  ASSERT_FALSE(dup);
  EXPECT_EQ(dup.error().code, EBADF);
}

TEST(Sys, PidfdOpenOfAnExitedChildIsReadableAndOfNoProcessFailsWithEsrch) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) ::_exit(0);
  auto pidfd = sys::pidfd_open(child);
  ASSERT_TRUE(pidfd) << pidfd.error().message();
  EXPECT_TRUE(is_cloexec(pidfd->get()));
  pollfd pfd{pidfd->get(), POLLIN, 0};
  EXPECT_EQ(::poll(&pfd, 1, 5000), 1) << "a pidfd polls readable once its process exits";
  ASSERT_EQ(::waitpid(child, nullptr, 0), child);
  auto gone = sys::pidfd_open(child);
  ASSERT_FALSE(gone);
  EXPECT_EQ(gone.error().code, ESRCH);
}

TEST(Sys, MemfdIsCloseOnExecAndReadsBackWhatWasWritten) {
  auto mem = sys::memfd("moat-test");
  ASSERT_TRUE(mem) << mem.error().message();
  EXPECT_TRUE(is_cloexec(mem->get()));
  ASSERT_TRUE(sys::write_all(mem->get(), "hello", 5));
  ASSERT_EQ(::lseek(mem->get(), 0, SEEK_SET), 0);
  auto text = sys::read_to_end(mem->get(), 5);
  ASSERT_TRUE(text) << text.error().message();
  EXPECT_EQ(*text, "hello");
}

TEST(Sys, SignalfdForSigchldReportsAChildsExit) {
  sigset_t before;
  ASSERT_EQ(::sigprocmask(SIG_SETMASK, nullptr, &before), 0);
  auto fd = sys::signalfd_for_sigchld();
  ASSERT_TRUE(fd) << fd.error().message();
  EXPECT_TRUE(is_cloexec(fd->get()));
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) ::_exit(0);
  pollfd pfd{fd->get(), POLLIN, 0};
  EXPECT_EQ(::poll(&pfd, 1, 5000), 1);
  signalfd_siginfo info{};
  EXPECT_EQ(::read(fd->get(), &info, sizeof info), static_cast<ssize_t>(sizeof info));
  EXPECT_EQ(info.ssi_signo, static_cast<unsigned>(SIGCHLD));
  ASSERT_EQ(::waitpid(child, nullptr, 0), child);
  ASSERT_EQ(::sigprocmask(SIG_SETMASK, &before, nullptr), 0);
}

TEST(Sys, TimerfdAfterZeroSecondsStillFires) {
  auto fd = sys::timerfd_after(0);
  ASSERT_TRUE(fd) << fd.error().message();
  EXPECT_TRUE(is_cloexec(fd->get()));
  pollfd pfd{fd->get(), POLLIN, 0};
  EXPECT_EQ(::poll(&pfd, 1, 5000), 1) << "a zero it_value would disarm the timer instead";
}

TEST(Sys, SendWithFdsHandsOverAnFdTheReceiverOwns) {
  auto sock = sys::make_socketpair(SOCK_SEQPACKET);
  ASSERT_TRUE(sock);
  auto p = sys::make_pipe();
  ASSERT_TRUE(p);
  const int fds[] = {p->second.get()};
  ASSERT_TRUE(sys::send_with_fds(sock->first.get(), "m", 1, fds, 1));
  p->second.reset();
  char buf[4] = {};
  UniqueFd got[2];
  std::size_t nfds = 0;
  auto n = sys::recv_with_fds(sock->second.get(), buf, sizeof buf, got, 2, &nfds);
  ASSERT_TRUE(n) << n.error().message();
  EXPECT_EQ(*n, 1u);
  EXPECT_EQ(buf[0], 'm');
  ASSERT_EQ(nfds, 1u);
  EXPECT_TRUE(is_cloexec(got[0].get())) << "received fds arrive close-on-exec (MSG_CMSG_CLOEXEC)";
  ASSERT_TRUE(sys::write_all(got[0].get(), "w", 1));
  char c = 0;
  ASSERT_TRUE(sys::read_exact(p->first.get(), &c, 1, false));
  EXPECT_EQ(c, 'w');
}

TEST(Sys, SendWithFdsRefusesMoreThanEightFds) {
  auto sock = sys::make_socketpair(SOCK_SEQPACKET);
  ASSERT_TRUE(sock);
  const int fds[] = {0, 0, 0, 0, 0, 0, 0, 0, 0};
  EXPECT_FALSE(sys::send_with_fds(sock->first.get(), "m", 1, fds, 9));
  EXPECT_TRUE(sys::send_with_fds(sock->first.get(), "m", 1, fds, 5))
      << "a call with the command's own stdio sends 5 (sandbox/session_call.cc)";
}

TEST(Sys, RecvWithFdsReturnsZeroAtEndOfStream) {
  auto sock = sys::make_socketpair(SOCK_SEQPACKET);
  ASSERT_TRUE(sock);
  sock->first.reset();
  char buf[4];
  std::size_t nfds = 7;
  auto n = sys::recv_with_fds(sock->second.get(), buf, sizeof buf, nullptr, 0, &nfds);
  ASSERT_TRUE(n) << n.error().message();
  EXPECT_EQ(*n, 0u);
  EXPECT_EQ(nfds, 0u);
}

TEST(Sys, WriteAllToAClosedSocketFailsWithEpipeInsteadOfRaisingSigpipe) {
  auto sock = sys::make_socketpair(SOCK_STREAM);
  ASSERT_TRUE(sock);
  sock->second.reset();
  auto w = sys::write_all(sock->first.get(), "x", 1);
  ASSERT_FALSE(w);
  EXPECT_EQ(w.error().code, EPIPE);
}

TEST(Sys, ReadExactReturnsFalseAtACleanEofWhenAllowed) {
  auto p = sys::make_pipe();
  ASSERT_TRUE(p);
  p->second.reset();
  char buf[4];
  auto got = sys::read_exact(p->first.get(), buf, sizeof buf, true);
  ASSERT_TRUE(got) << got.error().message();
  EXPECT_FALSE(*got);
}

TEST(Sys, ReadExactFailsOnEofPartWayThroughOrWhenEofIsNotAllowed) {
  auto p = sys::make_pipe();
  ASSERT_TRUE(p);
  ASSERT_TRUE(sys::write_all(p->second.get(), "ab", 2));
  p->second.reset();
  char buf[4];
  auto torn = sys::read_exact(p->first.get(), buf, sizeof buf, true);
  ASSERT_FALSE(torn);
  EXPECT_EQ(torn.error().code, 0);
  auto q = sys::make_pipe();
  ASSERT_TRUE(q);
  q->second.reset();
  EXPECT_FALSE(sys::read_exact(q->first.get(), buf, sizeof buf, false));
}

TEST(Sys, ReadToEndReadsExactlyTheLimitAndFailsWithEfbigOneBytePast) {
  for (std::size_t size : {std::size_t{0}, std::size_t{10}, std::size_t{11}}) {
    auto p = sys::make_pipe();
    ASSERT_TRUE(p);
    const std::string data(size, 'a');
    ASSERT_TRUE(sys::write_all(p->second.get(), data.data(), data.size()));
    p->second.reset();
    auto text = sys::read_to_end(p->first.get(), 10);
    if (size <= 10) {
      ASSERT_TRUE(text) << size << ": " << text.error().message();
      EXPECT_EQ(*text, data);
    } else {
      ASSERT_FALSE(text) << size;
      EXPECT_EQ(text.error().code, EFBIG);
    }
  }
}

TEST(Sys, ReadToEndWithoutALimitReadsPastOneBuffer) {
  TempDir dir;
  const std::string path = dir.path() + "/big";
  const std::string data(200000, 'b');
  {
    auto fd = sys::open_path(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
    ASSERT_TRUE(fd);
    ASSERT_TRUE(sys::write_all(fd->get(), data.data(), data.size()));
  }
  auto fd = sys::open_path(path, O_RDONLY);
  ASSERT_TRUE(fd);
  auto text = sys::read_to_end(fd->get());
  ASSERT_TRUE(text) << text.error().message();
  EXPECT_EQ(*text, data);
}

// Issue 26 item 15: a helper forked from threaded moatd keeps only its own fds. The child
// reports, by exit status, whether exactly the kept fds (and stdio) are still open.
TEST(Sys, CloseFdsExceptInChildKeepsOnlyTheListedFds) {
  std::vector<UniqueFd> held;
  for (int i = 0; i < 8; ++i) held.emplace_back(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  const int keep[] = {held[5].get(), held[1].get(), held[5].get()};  // unsorted, a duplicate
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (sys::close_fds_except_in_child(keep, 3) != 0) _exit(10);
    for (int fd = 0; fd < 1024; ++fd) {
      const bool open = fcntl(fd, F_GETFD) >= 0;
      const bool kept = fd <= 2 || fd == keep[0] || fd == keep[1];
      if (open != kept) _exit(20 + (fd & 0x7f) % 100);
    }
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "10: the call failed; 20+N: fd N is wrongly open or closed";
}


// Why sys::read_file exists: a /proc file opened while its process lived and read once it was
// reaped fails with ESRCH, and std::ifstream read through an istreambuf_iterator (how moatd's
// exec watch read a program's cmdline) throws there; in a moatd thread that was std::terminate,
// and CI saw it kill integration_sandbox when a probe died of SIGSYS right after its exec.
TEST(Sys, AProcFileReadAfterItsProcessWasReapedFailsWithEsrch) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::pause();
    ::_exit(0);
  }
  std::ifstream in("/proc/" + std::to_string(child) + "/cmdline", std::ios::binary);
  ASSERT_TRUE(in.is_open());
  ::kill(child, SIGKILL);
  ASSERT_EQ(::waitpid(child, nullptr, 0), child);
  EXPECT_THROW(std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()),
               std::ios_base::failure);
}

TEST(Sys, ReadFileGivesEveryFailureAsAnErrorNamingThePath) {
  TempDir dir;
  const std::string file = dir.path() + "/f";
  {
    std::ofstream out(file);
    out << "abc";
  }
  auto text = sys::read_file(file);
  ASSERT_TRUE(text) << text.error().message();
  EXPECT_EQ(*text, "abc");
  // A directory opens and its read fails (EISDIR): the ifstream way throws here too.
  auto dir_read = sys::read_file(dir.path());
  ASSERT_FALSE(dir_read);
  EXPECT_EQ(dir_read.error().code, EISDIR);
  EXPECT_NE(dir_read.error().message().find(dir.path()), std::string::npos)
      << dir_read.error().message();
  auto big = sys::read_file(file, 2);
  ASSERT_FALSE(big);
  EXPECT_EQ(big.error().code, EFBIG);
  auto gone = sys::read_file(dir.path() + "/none");
  ASSERT_FALSE(gone);
  EXPECT_EQ(gone.error().code, ENOENT);
}

// More entries than one 32 KiB read holds (names of ~40 bytes): each once, with its type, and
// never "." or "..".
TEST(Sys, ForEachDirentGivesEveryEntryOnceWithItsType) {
  TempDir dir;
  const std::string pad(30, 'n');
  for (int i = 0; i < 2000; ++i) std::ofstream(dir.path() + "/" + pad + std::to_string(i)) << "x";
  ASSERT_EQ(::mkdir((dir.path() + "/sub").c_str(), 0700), 0);
  UniqueFd fd(::open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  std::vector<std::string> names;
  unsigned char sub_type = 0;
  auto r = sys::for_each_dirent(fd.get(), [&](const char* name, unsigned char type) {
    names.emplace_back(name);
    if (names.back() == "sub") sub_type = type;
    return true;
  });
  ASSERT_TRUE(r) << r.error().message();
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names.size(), 2001u);
  EXPECT_EQ(std::adjacent_find(names.begin(), names.end()), names.end()) << "an entry twice";
  EXPECT_TRUE(sub_type == DT_DIR || sub_type == DT_UNKNOWN);
  int seen = 0;
  ASSERT_TRUE(sys::for_each_dirent(fd.get(), [&](const char*, unsigned char) { return true; }));
  ::lseek(fd.get(), 0, SEEK_SET);
  ASSERT_TRUE(sys::for_each_dirent(fd.get(), [&](const char*, unsigned char) { return ++seen < 3; }));
  EXPECT_EQ(seen, 3) << "false stops the walk";
}

TEST(Sys, ForEachDirentOfAFileFailsWithEnotdir) {
  TempDir dir;
  std::ofstream(dir.path() + "/f") << "x";
  UniqueFd fd(::open((dir.path() + "/f").c_str(), O_RDONLY | O_CLOEXEC));
  auto r = sys::for_each_dirent(fd.get(), [](const char*, unsigned char) { return true; });
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ENOTDIR);
}

}  // namespace
}  // namespace moat
