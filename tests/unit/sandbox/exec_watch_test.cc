// tests/unit/sandbox/exec_watch_test.cc: the exec watch's notification loop (issue 14) on any
// machine with seccomp user notification: no namespaces, no root. A forked child installs the
// watch filter as a worker does, hands the listener back, and runs a shell; the watch reads
// what it execs, asks a fake observer, and answers.
#include "sandbox/exec_watch.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <cstring>
#include <functional>
#include <mutex>

#include "sandbox/seccomp_programs.h"
#include "sandbox/sys.h"

namespace moat::sandbox {
namespace {

class FakeObserver final : public ExecObserver {
 public:
  ExecAnswer on_exec(const ExecRequest& r) override {
    std::lock_guard<std::mutex> lock(mu);
    requests.push_back(r);
    const bool refuse = std::filesystem::path(r.exe).filename() == "false";
    return ExecAnswer{!refuse, EPERM};
  }
  void on_end(const ExecEnd& e) override {
    std::lock_guard<std::mutex> lock(mu);
    ends.push_back(e);
  }
  const ExecRequest* find(const std::string& base) {
    for (const auto& r : requests)
      if (std::filesystem::path(r.exe).filename() == base) return &r;
    return nullptr;
  }
  const ExecEnd* end_of(const std::string& id) {
    for (const auto& e : ends)
      if (e.exec_id == id) return &e;
    return nullptr;
  }
  std::mutex mu;
  std::vector<ExecRequest> requests;
  std::vector<ExecEnd> ends;
};

struct Watched {
  pid_t pid = -1;
  UniqueFd listener;
};

// Forks a child that installs the watch filter, sends its listener over a socket and runs
// `body`, as a worker does before its exec.
Watched start_watched(const std::function<void()>& body) {
  auto pair = sys::make_socketpair(SOCK_SEQPACKET);
  EXPECT_TRUE(pair.has_value());
  if (!pair) return {};
  pid_t pid = fork();
  if (pid == 0) {
    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    int fd = install_exec_watch_in_child(exec_watch_filter());
    if (fd < 0) _exit(100);
    char one = 1;
    if (!sys::send_with_fds(pair->second.get(), &one, 1, &fd, 1)) _exit(101);
    close(fd);
    body();
    _exit(0);
  }
  Watched w;
  w.pid = pid;
  char one = 0;
  std::size_t nfds = 0;
  auto got = sys::recv_with_fds(pair->first.get(), &one, 1, &w.listener, 1, &nfds);
  EXPECT_TRUE(got.has_value() && nfds == 1);
  return w;
}

int wait_status(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  return status;
}

TEST(ExecWatch, EachExecWaitsForTheObserverAndARefusalFailsItWithEperm) {
  FakeObserver obs;
  Watched w = start_watched([] {
    // On the stack: the pages of the words are this process's alone (a string literal
    // would sit on a page of the test binary's file, see below).
    char path[] = "/bin/sh", zero[] = "sh", c[] = "-c",
         script[] = "/bin/true; /bin/false; echo \"false: $?\" >&2; exit 3";
    execl(path, zero, c, script, static_cast<char*>(nullptr));
    _exit(99);
  });
  ASSERT_TRUE(w.listener.valid());
  ExecWatch watch(std::move(w.listener), &obs);
  const int status = wait_status(w.pid);
  ExecWatchStats stats = watch.finish(std::chrono::seconds(2));
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 3);
  ASSERT_GE(obs.requests.size(), 3u);
  const ExecRequest& sh = obs.requests[0];
  EXPECT_TRUE(sh.first);
  EXPECT_EQ(sh.argv, (std::vector<std::string>{"sh", "-c",
                                               "/bin/true; /bin/false; echo \"false: $?\" >&2; "
                                               "exit 3"}));
  EXPECT_EQ(sh.path, "/bin/sh");
  EXPECT_EQ(sh.memory, ExecMemory::kExclusive);
  const ExecRequest* t = obs.find("true");
  ASSERT_NE(t, nullptr);
  EXPECT_FALSE(t->first);
  EXPECT_EQ(t->parent_exec, sh.exec_id);
  EXPECT_EQ(t->argv, (std::vector<std::string>{"/bin/true"}));
  EXPECT_EQ(stats.refused, 1u);
  const ExecEnd* true_end = obs.end_of(t->exec_id);
  ASSERT_NE(true_end, nullptr);
  EXPECT_EQ(true_end->code, 0);
  const ExecEnd* sh_end = obs.end_of(sh.exec_id);
  ASSERT_NE(sh_end, nullptr);
  EXPECT_EQ(sh_end->code, 3);
}

// A single thread, but the words on pages another process can change: a MAP_SHARED page
// (the process that forked it still maps it) or a page of a file. Before, kcmp's "no other
// process shares this memory" was taken as enough, and a process flipping a shared page
// could run a program other than the one judged, unverified.
TEST(ExecWatch, WordsOnASharedOrAFilePageAreCheckedAsShared) {
  for (const bool file_page : {false, true}) {
    FakeObserver obs;
    Watched w = start_watched([file_page] {
      if (file_page) {
        execl("/bin/true", "true", static_cast<char*>(nullptr));  // literals: the binary's
        _exit(99);
      }
      void* page = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
      if (page == MAP_FAILED) _exit(98);
      char* path = static_cast<char*>(page);
      std::strcpy(path, "/bin/true");
      char* argv[] = {path, nullptr};
      execv(path, argv);
      _exit(99);
    });
    ASSERT_TRUE(w.listener.valid());
    ExecWatch watch(std::move(w.listener), &obs);
    const int status = wait_status(w.pid);
    watch.finish(std::chrono::seconds(2));
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
    const ExecRequest* t = obs.find("true");
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->memory, ExecMemory::kShared) << (file_page ? "a file page" : "a MAP_SHARED page");
  }
}

TEST(ExecWatch, APathThatDoesNotOpenGetsTheKernelsErrnoUnrecorded) {
  FakeObserver obs;
  Watched w = start_watched([] {
    execl("/nonexistent/prog", "prog", static_cast<char*>(nullptr));
    _exit(errno == ENOENT ? 7 : 8);
  });
  ASSERT_TRUE(w.listener.valid());
  ExecWatch watch(std::move(w.listener), &obs);
  const int status = wait_status(w.pid);
  watch.finish(std::chrono::seconds(2));
  EXPECT_EQ(WEXITSTATUS(status), 7);
  EXPECT_TRUE(obs.requests.empty());
}

// Fail closed: once the watch is gone, nothing under it can exec (the kernel answers ENOSYS
// when a listener has closed), rather than running unwatched. The exit system calls are
// watched too (exit_group, and exit since issue 26 item 8), so they fail the same way and
// glibc's _exit ends the process by a fault: it still ends, having run nothing. What the
// exec got is told through a pipe, not the exit status.
TEST(ExecWatch, NoExecRunsOnceTheWatchIsGone) {
  FakeObserver obs;
  int told[2];
  ASSERT_EQ(pipe(told), 0);
  Watched w = start_watched([&told] {
    close(told[0]);
    usleep(200 * 1000);
    execl("/bin/true", "true", static_cast<char*>(nullptr));
    const char what = errno == ENOSYS ? '7' : '8';
    (void)!write(told[1], &what, 1);
    _exit(7);
  });
  close(told[1]);
  ASSERT_TRUE(w.listener.valid());
  { ExecWatch watch(std::move(w.listener), &obs); }  // stops and closes the listener at once
  char what = 0;
  EXPECT_EQ(read(told[0], &what, 1), 1);
  close(told[0]);
  EXPECT_EQ(what, '7') << "the exec did not fail with ENOSYS";
  const int status = wait_status(w.pid);
  EXPECT_TRUE(WIFEXITED(status) || WIFSIGNALED(status)) << status;
  EXPECT_TRUE(obs.requests.empty());
}

}  // namespace
}  // namespace moat::sandbox
