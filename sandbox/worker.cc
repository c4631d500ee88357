// sandbox/worker.cc: the worker's pre-exec sequence (see worker.h). Runs in the child after
// fork: raw syscalls only, each step returns 0 or an errno, and run_step reports the first
// failure as {step, errno} on the status pipe and exits.
#include "sandbox/worker.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "base/host_defaults.h"
#include "base/sanitizers.h"
#include "base/sys.h"
#include "sandbox/caps.h"
#include "sandbox/landlock.h"
#include "sandbox/seccomp_programs.h"

namespace moat::sandbox {
namespace {

constexpr int kStatusFd = 3;
constexpr int kDataFd = 4;
constexpr int kLandlockFd = 5;
constexpr int kFirstFree = 6;
constexpr int kParkBase = 100;  // fds are parked here so the final dup2s cannot collide

constexpr const char* kStepNames[] = {"none", "signals",      "setsid",     "close_fds", "rlimits",
                                      "caps", "no_new_privs", "landlock",   "chdir",     "seccomp",
                                      "exec", "handler",      "exec_watch", "terminal"};
// One name per step, in the enum's order: a step added without its name would be reported
// as another step's (or "unknown") when it fails.
static_assert(std::size(kStepNames) == static_cast<std::size_t>(Step::kLast) + 1,
              "kStepNames must name every Step, in order");

int status_fd_now = -1;  // where run_step reports: moves from plan.status_fd to kStatusFd

[[noreturn]] void report_and_exit(Step step, int err) {
  StatusRecord rec{static_cast<std::int32_t>(step), err};
  ssize_t n = ::write(status_fd_now, &rec, sizeof rec);
  (void)n;
  _exit(127);
}

void run_step(const WorkerPlan& plan, Step step, int (*fn)(const WorkerPlan&)) {
  // close_fds also lays out stdio, which a skipped close must still do: it checks itself.
  if (plan.skip == step && step != Step::kCloseFds) return;
  if (int err = fn(plan); err != 0) report_and_exit(step, err);
}

int reset_signals(const WorkerPlan&) {
  for (int sig = 1; sig < NSIG; ++sig) signal(sig, SIG_DFL);  // EINVAL for KILL/STOP: fine
  sigset_t none;
  sigemptyset(&none);
  return sigprocmask(SIG_SETMASK, &none, nullptr) == 0 ? 0 : errno;
}

// The worker is also the call's subreaper (kept across exec): a process that leaves the
// call's session and group (setsid, a double fork) is re-parented to the worker, not to the
// init, so it stays inside the call while the call runs; when the worker ends it passes to the
// init, which kills every child that is not a running call's worker (session_init.cc).
int new_session(const WorkerPlan&) {
  if (setsid() < 0) return errno;
  return prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0 ? 0 : errno;
}

int park(int fd) {
  if (fd < 0) return -1;
  return fcntl(fd, F_DUPFD_CLOEXEC, kParkBase);
}

// The caller's own stdin, stdout and stderr (moat sandbox exec), parked first: the init may
// hold them at any number, 0-2 included.
int place_passed_stdio(const WorkerPlan& plan) {
  int parked[3];
  for (int i = 0; i < 3; ++i)
    if ((parked[i] = park(plan.stdio[i])) < 0) return errno;
  for (int i = 0; i < 3; ++i)
    if (dup2(parked[i], i) < 0) return errno;
  return 0;
}

// stdin is /dev/null; stdout and stderr are the call's output pipe for exec (interleaved,
// as a terminal would show them), /dev/null otherwise; or the caller's own three.
int lay_out_stdio(const WorkerPlan& plan, int io) {
  if (plan.stdio[0] >= 0) return place_passed_stdio(plan);
  int null_fd = open("/dev/null", O_RDWR);
  if (null_fd < 0) return errno;
  int out = plan.kind == WorkerKind::kExec ? io : null_fd;
  if (dup2(null_fd, 0) < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0) return errno;
  return 0;
}

int close_fds(const WorkerPlan& plan) {
  int io = plan.io_fd >= 0 ? park(plan.io_fd) : -1;
  int status = park(plan.status_fd), ll = park(plan.landlock_fd);
  if ((plan.io_fd >= 0 && io < 0) || status < 0 || (plan.landlock_fd >= 0 && ll < 0)) return errno;
  if (int err = lay_out_stdio(plan, io)) return err;
  if (dup3(status, kStatusFd, O_CLOEXEC) < 0) return errno;
  status_fd_now = kStatusFd;
  if (plan.kind != WorkerKind::kExec && dup2(io, kDataFd) < 0) return errno;
  if (ll >= 0 && dup3(ll, kLandlockFd, O_CLOEXEC) < 0) return errno;
  if (plan.skip == Step::kCloseFds) {  // tests: keep what the init leaked, drop the call's
    for (int fd : {io, status, ll, plan.io_fd, plan.status_fd})  // own copies (status EOF)
      if (fd >= kFirstFree) close(fd);  // below it: already replaced by the layout
    return 0;
  }
  if (syscall(SYS_close_range, kFirstFree, ~0U, 0) != 0) return errno;
  return 0;
}

// A new session has no controlling tty (setsid): the first of fds 0-2 that is a terminal
// becomes its own, and this process group its foreground group, so Ctrl-C and the other
// job-control keys reach the command. Only the pty moat's client opened reaches here
// (exec_stdio.h refuses any other terminal); TIOCSTI stays denied by the seccomp filter.
int take_terminal(const WorkerPlan& plan) {
  if (!plan.terminal) return 0;
  int err = ENOTTY;
  for (int fd = 0; fd < 3; ++fd) {
    if (ioctl(fd, TIOCSCTTY, 0) == 0) return 0;
    if (errno != ENOTTY) err = errno;
  }
  return err;
}

int apply_rlimits(const WorkerPlan& plan) { return apply_rlimits_in_child(plan.rlimits); }
int drop_caps(const WorkerPlan&) { return drop_all_caps_in_child(); }
int set_no_new_privs(const WorkerPlan&) {
  return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 ? 0 : errno;
}
int apply_landlock(const WorkerPlan& plan) {
  if (plan.landlock_fd < 0) return 0;
  int err = restrict_self_in_child(kLandlockFd);
  close(kLandlockFd);
  return err;
}
int change_dir(const WorkerPlan& plan) { return chdir(plan.cwd) == 0 ? 0 : errno; }
int install_seccomp(const WorkerPlan& plan) { return install_filter_in_child(*plan.filter); }

// execvpe without the heap: glibc's execvpe searches the caller's PATH, not envp's, and the
// init has no environment. EACCES from any candidate wins over a later ENOENT (as in sh).
// The listener leaves with a record of its own on the status socket; moatd answers the
// worker's own exec through it, so it must be there before that exec.
// With the listener goes one end of a socket pair whose other end only this worker holds,
// close-on-exec: moatd sees it close exactly when the worker's exec succeeds, before the new
// program runs. Until then every notification is the worker's own (moatd's code, trying the
// PATH candidates) and is let through unread: its memory is the init's, which a moatd that
// is not root cannot read (it is not dumpable, and its mm belongs to moatd's namespace).
int install_exec_watch(const WorkerPlan& plan) {
  if (plan.kind != WorkerKind::kExec) return 0;
  int gate[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, gate) != 0) return errno;
  const int listener = install_exec_watch_in_child(*plan.exec_watch);
  if (listener < 0) return -listener;
  StatusRecord rec{static_cast<std::int32_t>(Step::kExecWatch), 0};
  // sendmsg by hand: sys::send_with_fds builds an Error (heap) when it fails, and an exec
  // worker shares the init's memory.
  const int fds[2] = {listener, gate[0]};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof fds)] = {};
  iovec iov{&rec, sizeof rec};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof fds);
  std::memcpy(CMSG_DATA(c), fds, sizeof fds);
  ssize_t n;
  do n = sendmsg(status_fd_now, &msg, MSG_NOSIGNAL);
  while (n < 0 && errno == EINTR);
  const int err = n == static_cast<ssize_t>(sizeof rec) ? 0 : (n < 0 ? errno : EIO);
  close(listener);
  close(gate[0]);  // gate[1] stays open until the exec closes it
  return err;
}

// A PATH candidate that is not there is passed over without an execve: under the exec watch
// each execve waits for moatd's answer, a round trip to another process per PATH entry.
// errno is left as execve would leave it (ENOENT, ENOTDIR), so the search reads the same.
bool is_missing(const char* path) {
  struct stat st;
  return stat(path, &st) != 0 && (errno == ENOENT || errno == ENOTDIR);
}

int exec_resolved(const WorkerPlan& plan) {
  const char* name = plan.argv[0];
  if (std::strchr(name, '/') != nullptr) {
    execve(name, plan.argv, plan.envp);
    return errno;
  }
  int err = ENOENT;
  const char* p = plan.path_env ? plan.path_env : kSystemPath;
  char buf[4096];
  while (*p != '\0') {
    const char* end = std::strchr(p, ':');
    std::size_t len = end ? static_cast<std::size_t>(end - p) : std::strlen(p);
    std::size_t name_len = std::strlen(name);
    if (len + name_len + 2 < sizeof buf) {
      std::memcpy(buf, p, len);
      buf[len] = '/';
      std::memcpy(buf + len + 1, name, name_len + 1);
      const char* candidate = len == 0 ? name : buf;
      if (!is_missing(candidate)) execve(candidate, plan.argv, plan.envp);
      if (errno == EACCES) err = EACCES;
      else if (errno != ENOENT && errno != ENOTDIR) return errno;
    }
    if (end == nullptr) break;
    p = end + 1;
  }
  return err;
}

// After setup succeeded the status pipe is closed, which moatd reads as "running".
[[noreturn]] void run_handler(const WorkerPlan& plan) {
  close(kStatusFd);
  auto request = sys::read_to_end(kDataFd, std::size_t{1} << 30);
  std::string response = request ? plan.handler(*request) : std::string();
  auto written = sys::write_all(kDataFd, response.data(), response.size());
  _exit(request && written ? 0 : 1);
}

// Opens (creating, truncating) the file inside the view with the worker's restrictions and
// hands the fd back: a symlink planted by the code resolves inside the view, never the host.
[[noreturn]] void run_create_file(const WorkerPlan& plan) {
  close(kStatusFd);
  int fd = open(plan.create_path, O_WRONLY | O_CREAT | O_TRUNC | O_NOCTTY | O_CLOEXEC, 0644);
  std::int32_t err = fd < 0 ? errno : 0;
  auto sent = sys::send_with_fds(kDataFd, &err, sizeof err, &fd, fd < 0 ? 0 : 1);
  _exit(sent ? 0 : 1);
}

// An exec worker is started the way posix_spawn starts a child: clone(CLONE_VM|CLONE_VFORK)
// on a stack of its own. The init is a fork of moatd; fork() would copy the page tables of all
// of that memory for a child that throws them away at exec, and the exec would tear the copy
// down again: that is most of what a fork costs here. Sharing is safe because:
//  - the init is single-threaded and CLONE_VFORK suspends it until the child has exec'd or
//    exited, so nothing else runs on the shared memory meanwhile;
//  - the steps allocate nothing and write no memory the init reads (status_fd_now and errno
//    are the child's alone while the init is suspended);
//  - every step changes per-task or per-process state the child does not share without
//    CLONE_FILES/CLONE_FS/CLONE_SIGHAND/CLONE_THREAD: fds, cwd, signal dispositions and mask,
//    session, rlimits, credentials, no_new_privs, Landlock domain, seccomp filter;
//  - every signal is blocked across clone (as in posix_spawn), so no handler inherited from
//    moatd runs in the child before kSignals resets the dispositions.
// Handler and create-file workers run code after the restrictions (the heap, a tool handler):
// they get a copy of the memory, fork().
constexpr std::size_t kWorkerStackBytes = 256 * 1024;

int exec_worker_entry(void* plan) { run_worker_in_child(*static_cast<const WorkerPlan*>(plan)); }

// One stack for every exec worker: the init is single-threaded and suspended while a child
// runs on it. Mapped once, with a guard page below it so an overflow faults.
char* exec_worker_stack_top() {
  static char* top = [] {
    const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    void* base = mmap(nullptr, kWorkerStackBytes + page, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (base == MAP_FAILED) return static_cast<char*>(nullptr);
    if (mprotect(base, page, PROT_NONE) != 0) return static_cast<char*>(nullptr);
    return static_cast<char*>(base) + page + kWorkerStackBytes;
  }();
  return top;
}

}  // namespace

const char* step_name(Step step) {
  auto i = static_cast<std::size_t>(step);
  return i < std::size(kStepNames) ? kStepNames[i] : "unknown";
}

Step step_from_name(const char* name) {
  for (std::size_t i = 0; i < std::size(kStepNames); ++i)
    if (std::strcmp(kStepNames[i], name) == 0) return static_cast<Step>(i);
  return Step::kNone;
}

void run_worker_in_child(const WorkerPlan& plan) {
  status_fd_now = plan.status_fd;
  run_step(plan, Step::kSignals, reset_signals);  // init blocks SIGCHLD for its signalfd
  run_step(plan, Step::kSetsid, new_session);     // no controlling tty; timeout kills the group
  run_step(plan, Step::kCloseFds, close_fds);     // nothing of the init leaks in
  run_step(plan, Step::kTerminal, take_terminal);  // after setsid, once fds 0-2 are laid out
  run_step(plan, Step::kRlimits, apply_rlimits);  // inherited by exec and every child
  run_step(plan, Step::kCaps, drop_caps);         // exec cannot regain any
  run_step(plan, Step::kNoNewPrivs, set_no_new_privs);  // Landlock and seccomp need it
  run_step(plan, Step::kLandlock, apply_landlock);      // second filesystem layer, scoping
  run_step(plan, Step::kChdir, change_dir);             // as the restricted code would
  run_step(plan, Step::kExecWatch, install_exec_watch);  // every later exec waits for moatd
  run_step(plan, Step::kSeccomp, install_seccomp);      // last: the steps above need denied calls
  if (plan.kind == WorkerKind::kHandler) run_handler(plan);
  if (plan.kind == WorkerKind::kCreateFile) run_create_file(plan);
  report_and_exit(Step::kExec, exec_resolved(plan));  // env carries no moatd secrets
}

// AddressSanitizer cannot follow a child that runs on a stack it did not allocate while it
// shares the parent's shadow memory (google/sanitizers#189: false stack-buffer-overflow
// reports in the worker's first step). Sanitizer builds start exec workers with fork().
constexpr bool kShareMemoryWithExecWorkers = !kAddressSanitizer;

pid_t start_worker(const WorkerPlan& plan) {
  char* stack = kShareMemoryWithExecWorkers && plan.kind == WorkerKind::kExec
                    ? exec_worker_stack_top()
                    : nullptr;
  if (stack == nullptr) {  // a handler or create-file worker, or no stack could be mapped
    pid_t pid = fork();
    if (pid == 0) run_worker_in_child(plan);
    return pid;
  }
  sigset_t all, old;
  sigfillset(&all);
  sigprocmask(SIG_SETMASK, &all, &old);
  pid_t pid = clone(exec_worker_entry, stack, CLONE_VM | CLONE_VFORK | SIGCHLD,
                    const_cast<WorkerPlan*>(&plan));
  const int err = errno;
  sigprocmask(SIG_SETMASK, &old, nullptr);
  errno = err;
  return pid;
}

}  // namespace moat::sandbox
