// tests/integration/e2e/exec_probe.cc: probes of the exec watch from inside the sandbox
// (issue 14, items 1 and 2).
//
// `exec_probe N threads|single` races the exec watch. Each round
// forks a child that execs the path in a static buffer. In "threads" mode the child first
// starts a thread that keeps rewriting that buffer between "/usr/bin/true" and
// "/usr/bin/yes" (a program the test's policy denies, and one that never ends by itself), so
// what moatd read and what the kernel runs may differ. Prints one line of counts:
//   rounds=N true=A killed=B refused=C other=D escaped=E
// escaped: a child still running after 3 s (a `yes` nobody stopped), killed here.
// In "idle" mode the child's second thread only sleeps: the memory is shared as far as the
// watch can tell, nothing changes it, and no exec may be killed.
//
// `exec_probe N swapscript|swapself` execs ./target N times while a second process keeps
// exchanging it (renameat2 RENAME_EXCHANGE) with a symlink to /usr/bin/yes, so the file moat
// judged and the one the kernel opens may differ. swapscript: ./target is a script whose
// interpreter is /usr/bin/true; swapself: ./target is a hard link to this program, the image
// the caller already runs. Same counts; a `yes` still running after 1 s is escaped.
//
// `exec_probe listener|clonevm|procmem` tries what would undo the watch and prints
// "<probe>: errno=<name>" (or "<probe>: ALLOWED"):
//   listener: a seccomp filter with a listener of its own (it would answer execs first);
//   clonevm:  clone(CLONE_VM) without CLONE_VFORK/CLONE_THREAD (memory shared with a process
//             that runs: it could rewrite an exec's argv after the watch read it);
//   clonevmparent: clone(CLONE_VM | CLONE_VFORK | CLONE_PARENT): a vfork child its parent's
//             other threads could write into, which the watch would not find walking up;
//   procmem:  opening a child's /proc/<pid>/mem for writing (the same, through procfs).
//
// `exec_probe SECONDS cwdswap|fdswap|dirfdswap` races, for SECONDS, a process of one thread
// that execs a file on a read-only mount (/data, bound by the test: /data/A/prog is a symlink
// to /usr/bin/true, /data/B/prog to /usr/bin/yes) against a sibling sharing its working
// directory (clone CLONE_FS) or fd table (clone CLONE_FILES) that keeps changing what the
// exec names (issue 26 item 4):
//   cwdswap:   execv("prog") from /data/A, the sibling fchdir()s between /data/B and /data/A;
//   fdswap:    execveat(fd, "", AT_EMPTY_PATH), the sibling dup2()s /usr/bin/yes and
//              /usr/bin/true onto fd;
//   dirfdswap: execveat(dirfd, "prog", 0), the sibling dup2()s /data/B and /data/A onto dirfd.
// Same counts as the swaps; a child still running after 1 s (a `yes`) is escaped.
//
// `exec_probe rawexit` ends by the raw exit system call (SYS_exit, code 7), not exit_group,
// from a process of one thread: the status its parent sees is 7 (issue 26 item 8).

#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char path[32] = "/usr/bin/true";

static void* flip(void* arg) {
  (void)arg;
  for (;;) {
    memcpy(path, "/usr/bin/yes", 13);  // with its NUL
    memcpy(path, "/usr/bin/true", 14);
  }
  return NULL;
}

static void* idle(void* arg) {
  (void)arg;
  for (;;) pause();
  return NULL;
}

static void swap_forever(void) {
  for (;;) renameat2(AT_FDCWD, "target", AT_FDCWD, "target.other", RENAME_EXCHANGE);
}

// Makes ./target (what `mode` says) and ./target.other, then starts the swapper.
static pid_t start_swapping(const char* mode) {
  unlink("target");
  unlink("target.other");
  if (strcmp(mode, "swapscript") == 0) {
    FILE* f = fopen("target", "w");
    if (f == NULL) return -1;
    fputs("#!/usr/bin/true\n", f);
    fclose(f);
    chmod("target", 0755);
  } else {
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) return -1;
    self[n] = '\0';
    if (link(self, "target") != 0) return -1;
  }
  if (symlink("/usr/bin/yes", "target.other") != 0) return -1;
  pid_t pid = fork();
  if (pid == 0) swap_forever();
  return pid;
}

static void child(int threads) {
  int null_fd = open("/dev/null", O_WRONLY);
  if (null_fd >= 0) dup2(null_fd, 1);
  if (threads == 1 || threads == 2) {
    pthread_t t;
    if (pthread_create(&t, NULL, threads == 2 ? idle : flip, NULL) != 0) _exit(125);
    usleep(50);
  }
  // Single: the words on this process's own stack, a page no other process can write.
  char local[32];
  memcpy(local, path, sizeof local);
  char target[] = "./target", exit_word[] = "exit";
  char* name = threads == 3 ? target : threads ? path : local;
  char* args[] = {name, threads == 3 ? exit_word : NULL, NULL};
  execv(name, args);
  _exit(errno == EPERM ? 126 : 127);
}

enum { kCwdSwap = 4, kFdSwap = 5, kDirfdSwap = 6 };

static long ms_since(const struct timespec* start) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (now.tv_sec - start->tv_sec) * 1000 + (now.tv_nsec - start->tv_nsec) / 1000000;
}

// The sibling: flips what the exec names for 20 ms, then ends.
static void flip_shared(int mode, int slot, int yes_side, int true_side) {
  struct timespec start;
  clock_gettime(CLOCK_MONOTONIC, &start);
  for (int i = 0;; ++i) {
    if (mode == kCwdSwap) {
      fchdir(yes_side);
      fchdir(true_side);
    } else {
      dup2(yes_side, slot);
      dup2(true_side, slot);
    }
    if ((i & 63) == 0 && ms_since(&start) > 20) _exit(0);
  }
}

static void shared_child(int mode) {
  int null_fd = open("/dev/null", O_WRONLY);
  if (null_fd >= 0) dup2(null_fd, 1);
  const int dirs = mode != kFdSwap;
  int true_side = open(dirs ? "/data/A" : "/usr/bin/true", O_PATH | (dirs ? O_DIRECTORY : 0));
  int yes_side = open(dirs ? "/data/B" : "/usr/bin/yes", O_PATH | (dirs ? O_DIRECTORY : 0));
  const int slot = 20;
  if (true_side < 0 || yes_side < 0 || chdir("/data/A") != 0 || dup2(true_side, slot) != slot)
    _exit(125);
  // A fork that shares the one thing (no CLONE_VM: the caller's memory stays its own).
  long flags = (mode == kCwdSwap ? CLONE_FS : CLONE_FILES) | SIGCHLD;
  if (syscall(SYS_clone, flags, 0, 0, 0, 0) == 0) flip_shared(mode, slot, yes_side, true_side);
  char name[] = "prog", empty[] = "";
  char* args[] = {name, NULL};
  extern char** environ;
  if (mode == kCwdSwap) execv(name, args);
  else syscall(SYS_execveat, slot, mode == kFdSwap ? empty : name, args, environ,
               mode == kFdSwap ? AT_EMPTY_PATH : 0);
  _exit(errno == EPERM ? 126 : 127);
}

static int report(const char* probe, long rc) {
  if (rc >= 0) printf("%s: ALLOWED\n", probe);
  else printf("%s: errno=%s\n", probe, strerrorname_np(errno));
  return 0;
}

static int clone_child(void* arg) {
  (void)arg;
  _exit(0);
}

static int probe(const char* name) {
  if (strcmp(name, "rawexit") == 0) syscall(SYS_exit, 7);
  if (strcmp(name, "listener") == 0) {
    struct sock_filter allow = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    struct sock_fprog prog = {1, &allow};
    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    return report(name, syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
                                SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog));
  }
  if (strcmp(name, "clonevm") == 0) {
    static char stack[65536];
    long rc = clone(clone_child, stack + sizeof stack, CLONE_VM | SIGCHLD, NULL);
    if (rc > 0) waitpid((pid_t)rc, NULL, 0);
    return report(name, rc);
  }
  if (strcmp(name, "clonevmparent") == 0) {
    static char stack[65536];
    long rc = clone(clone_child, stack + sizeof stack, CLONE_VM | CLONE_VFORK | CLONE_PARENT, NULL);
    return report(name, rc);
  }
  if (strcmp(name, "procmem") == 0) {
    pid_t pid = fork();
    if (pid == 0) {
      pause();
      _exit(0);
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/mem", pid);
    long fd = open(path, O_RDWR);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    return report(name, fd);
  }
  return 2;
}

int main(int argc, char** argv) {
  if (argc == 2) return probe(argv[1]);
  int rounds = argc > 1 ? atoi(argv[1]) : 100;
  const char* mode = argc > 2 ? argv[2] : "single";
  const int swapping = strncmp(mode, "swap", 4) == 0;
  int threads = strcmp(mode, "threads") == 0 ? 1 : strcmp(mode, "idle") == 0 ? 2 : swapping ? 3 : 0;
  const int shared = strcmp(mode, "cwdswap") == 0   ? kCwdSwap
                     : strcmp(mode, "fdswap") == 0  ? kFdSwap
                     : strcmp(mode, "dirfdswap") == 0 ? kDirfdSwap
                                                      : 0;
  const int patience_ms = swapping || shared ? 1000 : 3000;
  pid_t swapper = swapping ? start_swapping(mode) : 0;
  if (swapper < 0) return 2;
  // Shared modes: `rounds` is seconds of racing.
  struct timespec began;
  clock_gettime(CLOCK_MONOTONIC, &began);
  const int seconds = rounds;
  if (shared) rounds = 1 << 30;
  int n_true = 0, killed = 0, refused = 0, other = 0, escaped = 0, done = 0;
  for (int i = 0; i < rounds; ++i, ++done) {
    if (shared && ms_since(&began) >= seconds * 1000L) break;
    pid_t pid = fork();
    if (pid == 0 && shared) shared_child(shared);
    if (pid == 0) child(threads);
    if (pid < 0) return 2;
    int status = 0;
    int waited = 0;
    for (; waited < patience_ms; ++waited) {
      if (waitpid(pid, &status, WNOHANG) == pid) break;
      struct timespec ms = {0, 1000000};
      nanosleep(&ms, NULL);
    }
    if (waited == patience_ms) {
      ++escaped;
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      continue;
    }
    if (WIFEXITED(status) && (WEXITSTATUS(status) == 0 || (swapping && WEXITSTATUS(status) == 2)))
      ++n_true;
    else if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) ++killed;
    else if (WIFEXITED(status) && WEXITSTATUS(status) == 126) ++refused;
    else ++other;
  }
  if (swapper > 0) {
    kill(swapper, SIGKILL);
    waitpid(swapper, NULL, 0);
  }
  printf("rounds=%d true=%d killed=%d refused=%d other=%d escaped=%d\n", done, n_true, killed,
         refused, other, escaped);
  return 0;
}
