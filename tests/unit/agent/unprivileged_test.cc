// tests/unit/agent/unprivileged_test.cc: the loop process, once dropped, cannot exec, trace,
// mount or make namespaces, holds no capability and (started as root) is no longer root.
#include "agent/unprivileged.h"

#include <gtest/gtest.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <thread>

namespace moat::agent {
namespace {

// Runs `body` in a forked child, which reports on a pipe; the test process itself keeps its
// privileges.
std::string in_child(const std::function<std::string()>& body) {
  int fds[2];
  EXPECT_EQ(pipe(fds), 0);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    const std::string out = body();
    (void)!write(fds[1], out.data(), out.size());
    _exit(0);
  }
  close(fds[1]);
  std::string got;
  char buf[4096];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0) got.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return got;
}

// Runs `probe` in a forked child after the real drop; the child reports one line per check
// ("name=value").
std::string in_dropped_child(const std::function<std::string()>& probe) {
  return in_child([&] {
    if (auto r = drop_to_unprivileged_loop({65534, 65534}); !r)
      return "drop-failed=" + r.error().message();
    return probe();
  });
}

std::string status_field(const std::string& key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(key + ":", 0) == 0) {
      std::string v = line.substr(key.size() + 1);
      return v.substr(v.find_first_not_of(" \t"));
    }
  return "";
}

TEST(UnprivilegedLoop, CannotExec) {
  std::string r = in_dropped_child([] {
    char* const argv[] = {const_cast<char*>("/bin/true"), nullptr};
    execv("/bin/true", argv);
    return "execve=" + std::to_string(errno);
  });
  EXPECT_EQ(r, "execve=" + std::to_string(EPERM));
}

TEST(UnprivilegedLoop, CannotExecveat) {
  std::string r = in_dropped_child([] {
    char* const argv[] = {const_cast<char*>("true"), nullptr};
    char* const envp[] = {nullptr};
    long rc = syscall(SYS_execveat, AT_FDCWD, "/bin/true", argv, envp, 0);
    return "execveat=" + std::to_string(rc == -1 ? errno : 0);
  });
  EXPECT_EQ(r, "execveat=" + std::to_string(EPERM));
}

TEST(UnprivilegedLoop, CannotCreateNamespacesOrMount) {
  std::string r = in_dropped_child([] {
    std::string out;
    out += "unshare=" + std::to_string(unshare(CLONE_NEWUSER) == -1 ? errno : 0) + ";";
    out +=
        "mount=" +
        std::to_string(syscall(SYS_mount, "none", "/tmp", "tmpfs", 0, nullptr) == -1 ? errno : 0) +
        ";";
    out += "clone3=" + std::to_string(syscall(SYS_clone3, nullptr, 0) == -1 ? errno : 0) + ";";
    out +=
        "ptrace=" + std::to_string(ptrace(PTRACE_TRACEME, 0, nullptr, nullptr) == -1 ? errno : 0);
    return out;
  });
  EXPECT_EQ(r, "unshare=" + std::to_string(EPERM) + ";mount=" + std::to_string(EPERM) +
                   ";clone3=" + std::to_string(ENOSYS) + ";ptrace=" + std::to_string(EPERM));
}

TEST(UnprivilegedLoop, HoldsNoCapabilitiesAndSetsNoNewPrivs) {
  std::string r = in_dropped_child([] {
    return "CapEff=" + status_field("CapEff") + ";CapPrm=" + status_field("CapPrm") +
           ";CapAmb=" + status_field("CapAmb") + ";NoNewPrivs=" + status_field("NoNewPrivs");
  });
  EXPECT_EQ(r,
            "CapEff=0000000000000000;CapPrm=0000000000000000;CapAmb=0000000000000000;"
            "NoNewPrivs=1");
}

TEST(UnprivilegedLoop, RootSwitchesToTheUnprivilegedUid) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root: the identity switch only happens as root";
  std::string r = in_dropped_child([] {
    return "uid=" + std::to_string(getuid()) + ";euid=" + std::to_string(geteuid()) +
           ";gid=" + std::to_string(getgid()) + ";CapBnd=" + status_field("CapBnd");
  });
  EXPECT_EQ(r, "uid=65534;euid=65534;gid=65534;CapBnd=0000000000000000");
}

// The filter refuses ptrace and process_vm_writev, but /proc/<pid>/mem is a file: a loop could
// open it for writing in any dumpable process of its uid (the user's shell, rootless; as root
// the sandbox's own processes, whose host uid 65534 it shares) and rewrite an exec's argv
// after the exec watch read it, or run code there. Landlock puts the loop in a domain of its
// own, and a process in a domain may not ptrace-access one outside it.
TEST(UnprivilegedLoop, CannotOpenTheMemoryOfAnotherProcessOfItsUid) {
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  pid_t target = fork();
  if (target == 0) {
    if (geteuid() == 0 &&
        (setresgid(65534, 65534, 65534) != 0 || setresuid(65534, 65534, 65534) != 0))
      _exit(1);
    prctl(PR_SET_DUMPABLE, 1);  // the uid change cleared it
    (void)!write(ready[1], "r", 1);
    pause();
    _exit(0);
  }
  char c;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  const std::string path = "/proc/" + std::to_string(target) + "/mem";
  std::string r = in_dropped_child([&] {
    const int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
    return fd >= 0 ? std::string("opened") : "open=" + std::to_string(errno);
  });
  kill(target, SIGKILL);
  waitpid(target, nullptr, 0);
  close(ready[0]);
  close(ready[1]);
  EXPECT_NE(r, "opened");
  EXPECT_EQ(r.rfind("open=", 0), 0u) << r;
}

TEST(UnprivilegedLoop, ThreadsAndForkStillWork) {
  // pthread_create tries clone3 first; ENOSYS must make glibc fall back to clone.
  std::string r = in_dropped_child([] {
    int value = 0;
    std::thread t([&] { value = 42; });
    t.join();
    pid_t p = fork();
    if (p == 0) _exit(7);
    int st = 0;
    waitpid(p, &st, 0);
    return "thread=" + std::to_string(value) + ";fork=" + std::to_string(WEXITSTATUS(st));
  });
  EXPECT_EQ(r, "thread=42;fork=7");
}

// Capabilities, no_new_privs and the seccomp filter are per thread: a thread started before
// the drop would keep all of them, so the drop refuses to run while one exists.
TEST(UnprivilegedLoop, RefusesToDropWhileASecondThreadRuns) {
  const std::string got = in_child([] {
    int wake[2];
    if (pipe(wake) != 0) return std::string("pipe failed");
    std::thread waiting([&] {
      char c;
      (void)!read(wake[0], &c, 1);
    });
    auto r = drop_to_unprivileged_loop({65534, 65534});
    (void)!write(wake[1], "x", 1);
    waiting.join();
    return r ? std::string("dropped") : "refused=" + r.error().message();
  });
  EXPECT_EQ(got.rfind("refused=", 0), 0u) << got;
  EXPECT_NE(got.find("2 threads"), std::string::npos) << got;
}

}  // namespace
}  // namespace moat::agent
