// sandbox/exec_watch.cc: the notification loop of the exec watch (see exec_watch.h).
//
// One exec, in order:
//   1. receive the notification (the caller waits in execve);
//   2. read the path and argv from its memory (process_vm_readv), bounded;
//   3. resolve the path in the sandbox's view (/proc/<pid>/root, RESOLVE_IN_ROOT): a path
//      that does not open fails the exec with the kernel's own errno, unrecorded;
//   4. if another running thread shares the caller's memory, read both again and refuse on a
//      difference;
//   5. check the notification is still live (SECCOMP_IOCTL_NOTIF_ID_VALID): the pid read
//      from is still the caller, stopped in this execve;
//   6. have it judged and recorded (ExecObserver), answer continue or the errno;
//   7. for a shared memory, a path that could be swapped, or one named from the caller's cwd
//      or fds (which a CLONE_FS or CLONE_FILES sibling can change), check once the exec is
//      done that /proc/<pid>/exe is the file judged (a script's interpreter).
// exit_group notifications give the exit code; so does a thread group leader's exit (the
// raw exit system call), kept until the process's end is seen on its pidfd.
#include "sandbox/exec_watch.h"

#include <fcntl.h>
#include <linux/kcmp.h>
#include <linux/openat2.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <unordered_map>

#include "base/log.h"
#include "base/sys.h"
#include "policy/code_env.h"
#include "sandbox/exec_budget.h"
#include "sandbox/exec_resolve.h"
#include "sandbox/remote_memory.h"

namespace moat::sandbox {
namespace {

using Clock = std::chrono::steady_clock;

constexpr auto kVerifyWindow = std::chrono::milliseconds(200);
constexpr std::uint64_t kGateTag = ~std::uint64_t{0};

struct ProcStatus {
  pid_t tgid = -1, ppid = -1;
  int threads = 0;
};

// One read of /proc/<pid>/status (it runs for every exec and exit: no stream, no locale).
ProcStatus proc_status(pid_t pid) {
  ProcStatus s;
  char path[32];
  std::snprintf(path, sizeof path, "/proc/%d/status", pid);
  UniqueFd fd(open(path, O_RDONLY | O_CLOEXEC));
  char buf[4096];
  const ssize_t n = fd.valid() ? read(fd.get(), buf, sizeof buf - 1) : -1;
  if (n <= 0) return s;
  buf[n] = '\0';
  auto field = [&](const char* key) -> long {
    const char* at = std::strstr(buf, key);
    return at == nullptr ? -1 : std::strtol(at + std::strlen(key), nullptr, 10);
  };
  s.tgid = static_cast<pid_t>(field("\nTgid:"));
  s.ppid = static_cast<pid_t>(field("\nPPid:"));
  s.threads = static_cast<int>(field("\nThreads:"));
  return s;
}

// No other running thread can write the caller's memory: it has one thread, and every
// process it shares its memory with (a vfork parent, suspended until the exec) has one too.
// clone(CLONE_VM) without CLONE_VFORK or CLONE_THREAD is refused by the session's filter, so
// vfork chains are the only sharing across processes. The walk ends at the session's init
// (`init`): moat's own code, which shares its memory only with a worker it has not exec'd
// yet (whose execs are the gate's, never judged here), and which kcmp cannot inspect when
// moatd is not root (it is not dumpable): every program a call's shell started would read as
// made from a shared memory.
bool memory_exclusive(pid_t tgid, const ProcStatus& st, pid_t init) {
  if (st.threads != 1) return false;
  pid_t cur = tgid, parent = st.ppid;
  for (int depth = 0; depth < 16 && parent > 1; ++depth) {
    if (parent == init) return true;
    const long same = syscall(SYS_kcmp, cur, parent, KCMP_VM, 0, 0);
    if (same > 0) return true;    // another memory: nothing above shares this one
    if (same < 0) return false;   // unknown: treated as shared (read twice, verified)
    ProcStatus ps = proc_status(parent);
    if (ps.threads != 1) return false;
    cur = parent;
    parent = ps.ppid;
  }
  return parent <= 1;
}

struct Program {
  std::string exec_id;
  UniqueFd pidfd;
  Clock::time_point start;
  // The code of its thread group leader's raw exit: what its parent sees when no thread
  // calls exit_group and no signal ends the rest.
  std::optional<int> code;
  bool ended = false;  // its end is recorded already (killed by the verification)
};

// At most this many old memories are held at once by all the watches of this moatd (an fd
// each): a call whose processes exec their own image and make the exec fail on purpose (a
// small RLIMIT_STACK and a large argv: E2BIG) keeps each one waiting for as long as they live.
constexpr int kMaxHeldMemories = 256;
std::atomic<int> g_held_memories{0};

// A caller's memory as it was before its exec: /proc/<pid>/mem refers to the memory it was
// opened on for as long as it is open, and reads nothing (0 bytes, not EIO) once that memory
// is gone, which the exec does.
class OldMemory {
 public:
  OldMemory() = default;
  explicit OldMemory(pid_t pid) {
    if (g_held_memories.fetch_add(1) >= kMaxHeldMemories) {
      --g_held_memories;
      return;
    }
    fd_ = UniqueFd(open(("/proc/" + std::to_string(pid) + "/mem").c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd_.valid()) --g_held_memories;
  }
  OldMemory(OldMemory&& o) noexcept : fd_(std::move(o.fd_)) {}
  OldMemory& operator=(OldMemory&& o) noexcept {
    if (this != &o) {
      release();
      fd_ = std::move(o.fd_);
    }
    return *this;
  }
  ~OldMemory() { release(); }
  bool valid() const { return fd_.valid(); }
  // Address 0 is never mapped (mmap_min_addr): EIO while the memory lives, 0 once it is gone.
  bool gone() const {
    char c;
    return fd_.valid() && pread(fd_.get(), &c, 1, 0) == 0;
  }

 private:
  void release() {
    if (fd_.valid()) --g_held_memories;
    fd_.reset();
  }
  UniqueFd fd_;
};

using FileId = std::pair<dev_t, ino_t>;

// A program let run that moat must see running before it trusts the check: its file was
// named through a path that could be swapped (a writable or symlinked one), or its caller's
// memory was shared. /proc/<pid>/exe must become the file judged (a script's interpreter)
// and, for a shared memory, /proc/<pid>/cmdline the argv judged; anything else is killed.
// Nothing is concluded before the exec is seen done: a caller kept off the CPU (SCHED_IDLE
// beside busy processes) can hold its exec back past any window.
struct PendingVerify {
  pid_t pid = -1;  // thread group
  pid_t tid = -1;  // the thread that made the exec
  FileId image;    // what /proc/<pid>/exe must become
  FileId before;   // the image before the exec
  // When the program execs its own image, /proc/<pid>/exe cannot tell the exec happened; its
  // memory does: a vfork parent that shared it (`sharer`) no longer does, or it is gone.
  pid_t sharer = -1;
  OldMemory old_memory;
  bool check_argv = false;
  std::vector<std::string> argv;
  Clock::time_point until;  // polled every millisecond until then, then every kSlowPoll
  Clock::time_point next;
  std::optional<Clock::time_point> argv_by;  // how long an empty cmdline is waited for
};

constexpr auto kSlowPoll = std::chrono::milliseconds(20);

std::optional<FileId> exe_of(pid_t pid) {
  struct stat st{};
  if (stat(("/proc/" + std::to_string(pid) + "/exe").c_str(), &st) != 0) return std::nullopt;
  return std::make_pair(st.st_dev, st.st_ino);
}

bool exec_done(const PendingVerify& v, const FileId& exe) {
  if (exe != v.before) return true;
  if (v.sharer > 0) {
    const long same = syscall(SYS_kcmp, v.pid, v.sharer, KCMP_VM, 0, 0);
    if (same >= 0) return same != 0;
  }
  return v.old_memory.gone();
}

// Empty while an exec is between switching to the new memory (/proc/<pid>/exe is already the
// new file) and laying out its argv (the kernel's create_elf_tables sets arg_end last).
// Empty too once the process is gone (its read fails with ESRCH).
std::string cmdline_of(pid_t pid) {
  auto text = sys::read_file("/proc/" + std::to_string(pid) + "/cmdline");
  return text ? std::move(*text) : std::string();
}

std::string joined(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& a : argv) out += a + '\0';
  return out;
}

// Whether the file `path` names depends on the caller's working directory or fd table: a
// relative path (from the cwd, or execveat's directory fd), an empty one (execveat's
// AT_EMPTY_PATH: the fd itself), or the caller's own /proc entries (/proc/self/fd/N,
// /dev/fd/N). Another process can share those (clone with CLONE_FS or CLONE_FILES, issue 26
// item 4) and change them between moat's open and the kernel's, whatever the caller's memory
// and whatever mount the files are on. kcmp(KCMP_FS/KCMP_FILES) against every process of the
// session could prove them unshared, at a cost per exec that grows with the session; these
// execs are rare on read-only mounts (elsewhere they are verified already), so every one is
// verified once it runs.
bool names_through_process_state(const std::string& path) {
  if (path.empty() || path[0] != '/') return true;
  for (const char* prefix : {"/proc/", "/dev/fd/", "/dev/std"})
    if (path.rfind(prefix, 0) == 0) return true;
  return false;
}

// What a verification concludes now: keep waiting, done, or kill (with why).
enum class Verdict { kWait, kDone, kKill };

// `final`: the process makes a system call of its new program, so its exec is complete.
Verdict verify_one(PendingVerify& v, Clock::time_point now, bool final, std::string* why) {
  auto exe = exe_of(v.pid);
  if (!exe) return Verdict::kDone;  // gone: nothing left running to stop
  if (!exec_done(v, *exe)) return Verdict::kWait;
  const bool judged = *exe == v.image;
  if (judged && v.check_argv && !final && cmdline_of(v.pid).empty()) {
    // The new memory is in place, its argv not yet (see cmdline_of): a window from now on.
    if (!v.argv_by) v.argv_by = std::max(v.until, now + kVerifyWindow);
    if (now < *v.argv_by) return Verdict::kWait;
  }
  if (judged && (!v.check_argv || cmdline_of(v.pid) == joined(v.argv))) return Verdict::kDone;
  *why = judged ? "killed: its argv is not the one that was checked"
                : "killed: /proc/<pid>/exe is not the file that was checked";
  return Verdict::kKill;
}

class Server {
 public:
  Server(int listener, int wake, int gate, ExecObserver* observer, ExecWatchStats& stats,
         std::atomic<bool>& stopping, double cpu_budget_s, ExecWatch::OverBudget& over,
         const ExecWatch::BeforeProgram& before_program)
      : listener_(listener),
        wake_(wake),
        gate_(gate),
        observer_(observer),
        stats_(stats),
        stopping_(stopping),
        budget_(cpu_budget_s),
        over_(over),
        before_program_(before_program),
        worker_execd_(gate < 0) {}

  void run();

 private:
  void on_notification();
  // True while the worker has not exec'd yet (its gate is open); records its program once
  // the gate has closed.
  bool before_worker_exec(pid_t caller);
  // Whether the worker's own exec may go on: ExecWatch's before_program, run at its first
  // attempt; its answer stands for every later one.
  bool placed(pid_t worker);
  void record_worker_program();
  void on_exec(const seccomp_notif& n);
  void judge_and_answer(std::uint64_t id, pid_t tid, const ProcStatus& st, ExecRequest& req,
                        const Resolved& file);
  // What must be checked once the exec let run is done (nothing when the file cannot be
  // swapped and no other thread can rewrite the words); sets req.refusal when it cannot be.
  std::optional<PendingVerify> plan_verify(pid_t tid, const ProcStatus& st, ExecRequest& req,
                                           const Resolved& file);
  void on_exit_group(const seccomp_notif& n);
  void on_thread_exit(const seccomp_notif& n);
  void on_pidfd(pid_t pid);
  // False when the caller no longer waits for this answer (a signal interrupted it, or it
  // died): what was let run did not run.
  bool answer(std::uint64_t id, bool allow, int error);
  bool still_waiting(std::uint64_t id) const {
    std::uint64_t copy = id;
    return ioctl(listener_, SECCOMP_IOCTL_NOTIF_ID_VALID, &copy) == 0;
  }
  void started(pid_t pid, const std::string& exec_id);
  void ended(pid_t pid, ExecEnd end);
  void verify_pending();
  int verify_poll_ms() const;
  // Thread `tid` of `pid` makes a system call (an exec, an exit): an exec of its own that is
  // done is verified now, with no more waiting; one that is not done failed (the thread runs
  // its old program on). Another thread's call says nothing of it.
  void settle(pid_t pid, pid_t tid);
  void kill_unverified(pid_t pid, const std::string& why);
  std::string parent_of(pid_t pid, pid_t ppid) const;
  bool fixed_dir(pid_t pid, const std::string& dir);
  // Whether what `path` names (from `cwd`) could be another file by the time it is opened
  // again: the file is on a writable mount, or a directory on the way is.
  bool could_be_swapped(pid_t pid, const std::string& path, const std::string& cwd, bool read_only);

  int listener_, wake_, gate_;
  UniqueFd epoll_;
  ExecObserver* observer_;
  ExecWatchStats& stats_;
  std::atomic<bool>& stopping_;
  ExecBudget budget_;
  ExecWatch::OverBudget& over_;
  const ExecWatch::BeforeProgram& before_program_;
  std::optional<bool> placed_;  // before_program's answer, once it ran
  std::unordered_map<pid_t, Program> running_;  // by thread group id
  std::vector<PendingVerify> verify_;
  // Directories that are, with every directory above them, on read-only mounts: nothing in
  // the sandbox can change what a path through them names (mounts are fixed for the session).
  std::unordered_map<std::string, bool> fixed_dirs_;
  UniqueFd root_;  // the sandbox's root, from the first caller
  std::uint64_t next_id_ = 0;
  bool first_done_ = false;
  bool hung_up_ = false;
  bool worker_execd_;       // the gate has closed (or there is none)
  pid_t worker_pid_ = -1;   // the caller of the worker's own exec attempts
  pid_t init_pid_ = -1;     // the worker's parent: the session's init
};

void Server::run() {
  epoll_ = UniqueFd(epoll_create1(EPOLL_CLOEXEC));
  if (!epoll_.valid()) return;
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = 0;  // the listener
  epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, listener_, &ev);
  ev.data.u64 = 1;  // finish()
  epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, wake_, &ev);
  if (gate_ >= 0) {
    ev.data.u64 = kGateTag;  // the worker's exec succeeded (or it exited)
    epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, gate_, &ev);
  }
  while (!(hung_up_ && running_.empty()) && !stopping_.load()) {
    epoll_event events[64];
    int n = epoll_wait(epoll_.get(), events, 64, verify_poll_ms());
    if (n < 0 && errno != EINTR) break;
    for (int i = 0; i < n; ++i) {
      const std::uint64_t tag = events[i].data.u64;
      if (tag == 0 && (events[i].events & EPOLLIN)) on_notification();
      if (tag == 0 && (events[i].events & (EPOLLHUP | EPOLLERR)) && !(events[i].events & EPOLLIN)) {
        hung_up_ = true;
        epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, listener_, nullptr);
      }
      if (tag == kGateTag) {
        epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, gate_, nullptr);
        (void)before_worker_exec(-1);
        continue;
      }
      if (tag >= 2) on_pidfd(static_cast<pid_t>(tag - 2));
    }
    if (!verify_.empty()) verify_pending();
  }
  // Stopped with programs still running (the init kills them): they end without a status.
  for (auto& [pid, p] : running_) {
    if (p.ended) continue;
    ExecEnd end{p.exec_id, p.code, std::nullopt,
                std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - p.start)
                    .count(),
                "the call ended before it did"};
    if (observer_) observer_->on_end(end);
  }
  running_.clear();
}

void Server::on_notification() {
  seccomp_notif n;
  std::memset(&n, 0, sizeof n);  // RECV refuses a buffer that is not zeroed
  if (ioctl(listener_, SECCOMP_IOCTL_NOTIF_RECV, &n) != 0) return;  // ENOENT: the caller died
  ++stats_.notifications;
  if (before_worker_exec(static_cast<pid_t>(n.pid)))
    return (void)answer(n.id, placed(static_cast<pid_t>(n.pid)), EPERM);
  if (n.data.nr == __NR_exit_group) return on_exit_group(n);
  if (n.data.nr == __NR_exit) return on_thread_exit(n);
  // Over its budget the call is being ended: its execs are refused unread, which costs moatd
  // one notification each.
  if (over_.flag.load(std::memory_order_acquire)) return (void)answer(n.id, false, EPERM);
  // The rate bound: the watch (and the caller, in its execve) waits for the bucket. The wait
  // ends early when finish() is called.
  if (auto wait = budget_.wait_before_check(); wait.count() > 0) {
    pollfd p{wake_, POLLIN, 0};
    (void)poll(&p, 1, static_cast<int>(wait.count()));
  }
  on_exec(n);
  if (budget_.over() && !over_.flag.load(std::memory_order_relaxed)) {
    over_.why = budget_.why();
    over_.flag.store(true, std::memory_order_release);
  }
}

bool Server::before_worker_exec(pid_t caller) {
  if (worker_execd_) return false;
  pollfd p{gate_, POLLIN, 0};
  if (poll(&p, 1, 0) == 0) {  // still open: only the worker holds the other end
    if (caller > 0) worker_pid_ = caller;
    return true;
  }
  worker_execd_ = true;
  record_worker_program();
  return false;
}

bool Server::placed(pid_t worker) {
  if (!before_program_) return true;
  if (!placed_) placed_ = static_cast<bool>(before_program_(worker));
  return *placed_;
}

// The worker's program, read once it runs (its memory and /proc entries are its own now).
void Server::record_worker_program() {
  if (worker_pid_ <= 0 || first_done_) return;
  init_pid_ = proc_status(worker_pid_).ppid;
  const std::string proc = "/proc/" + std::to_string(worker_pid_);
  const std::string text = cmdline_of(worker_pid_);
  ExecRequest req;
  req.pid = worker_pid_;
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t nul = text.find('\0', at);
    req.argv.push_back(text.substr(at, nul == std::string::npos ? std::string::npos : nul - at));
    if (nul == std::string::npos) break;
    at = nul + 1;
  }
  req.exe = read_link(proc + "/exe");
  if (req.exe.empty()) return;  // gone already, or its exec failed and it exited
  req.path = req.exe;
  req.cwd = read_link(proc + "/cwd");
  req.memory = ExecMemory::kExclusive;
  req.first = true;
  req.exec_id = std::to_string(++next_id_);
  if (observer_) (void)observer_->on_exec(req);
  ++stats_.execs;
  first_done_ = true;
  started(worker_pid_, req.exec_id);
}

bool Server::answer(std::uint64_t id, bool allow, int error) {
  seccomp_notif_resp r{};
  r.id = id;
  if (allow) {
    r.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
  } else {
    r.error = -error;
  }
  return ioctl(listener_, SECCOMP_IOCTL_NOTIF_SEND, &r) == 0;  // ENOENT: it went meanwhile
}

// The program's end is recorded here, with its code: the process is about to go, and
// waiting for its pidfd would wake this thread a third time per exec. Only a program that
// ends without exit_group (a signal) is seen through its pidfd.
void Server::on_exit_group(const seccomp_notif& n) {
  auto it = running_.find(static_cast<pid_t>(n.pid));
  if (it == running_.end()) {
    ProcStatus st = proc_status(static_cast<pid_t>(n.pid));
    it = running_.find(st.tgid);
  }
  if (it != running_.end() && !verify_.empty()) {
    settle(it->first, static_cast<pid_t>(n.pid));  // one killed here has its end recorded
    if (it->second.ended) return (void)answer(n.id, true, 0);
  }
  // Not answered: a signal interrupted the exit_group (it is made again) or killed the
  // process (its pidfd says how): either way, its end is not this one.
  if (!answer(n.id, true, 0) || it == running_.end()) return;
  Program& p = it->second;
  if (!p.ended && observer_)
    observer_->on_end(ExecEnd{
        p.exec_id, static_cast<int>(n.data.args[0] & 0xff), std::nullopt,
        std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - p.start).count(),
        ""});
  if (p.pidfd.valid()) epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, p.pidfd.get(), nullptr);
  running_.erase(it);
}

// One thread ends (the raw exit system call; glibc's exit() and _exit() are exit_group).
// When it is a program's thread group leader, its code is what the parent sees if the other
// threads end the same way (wait_task_zombie in kernel/exit.c reads the leader's exit_code
// unless the group exited as a whole): kept for the end the pidfd shows. Any other thread's
// exit is answered at once.
void Server::on_thread_exit(const seccomp_notif& n) {
  const pid_t tid = static_cast<pid_t>(n.pid);
  auto it = running_.find(tid);  // keyed by thread group id: found only for a leader
  if (it == running_.end() || proc_status(tid).tgid != tid) return (void)answer(n.id, true, 0);
  if (!verify_.empty()) {
    settle(tid, tid);  // its new program runs code of its own: the exec is verified now
    if (it->second.ended) return (void)answer(n.id, true, 0);
  }
  if (!answer(n.id, true, 0)) return;  // interrupted (made again) or killed (the pidfd says)
  it->second.code = static_cast<int>(n.data.args[0] & 0xff);
}

bool Server::could_be_swapped(pid_t pid, const std::string& path, const std::string& cwd,
                              bool read_only) {
  const std::string typed = absolute_path(path, cwd);
  return !read_only || cwd.empty() ||
         !fixed_dir(pid, typed.substr(0, std::max<std::size_t>(1, typed.rfind('/'))));
}

bool Server::fixed_dir(pid_t pid, const std::string& dir) {
  if (auto it = fixed_dirs_.find(dir); it != fixed_dirs_.end()) return it->second;
  bool fixed = false;
  if (!dir.empty() && dir[0] == '/' && dir.find("/..") == std::string::npos) {
    const auto slash = dir.rfind('/');
    const bool above = dir == "/" || fixed_dir(pid, slash == 0 ? "/" : dir.substr(0, slash));
    if (above) {
      (void)pid;
      open_how how{};
      how.flags = O_PATH | O_CLOEXEC;
      how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
      UniqueFd d(root_.valid() ? static_cast<int>(syscall(SYS_openat2, root_.get(), dir.c_str(),
                                                          &how, sizeof how))
                               : -1);
      struct statvfs vfs{};
      fixed = d.valid() && fstatvfs(d.get(), &vfs) == 0 && (vfs.f_flag & ST_RDONLY) != 0;
    }
  }
  fixed_dirs_.emplace(dir, fixed);
  return fixed;
}

std::string Server::parent_of(pid_t pid, pid_t ppid) const {
  // The nearest process up the tree with a program of this call: a fork of a shell has
  // none of its own.
  for (int depth = 0; depth < 64 && pid > 1; ++depth) {
    if (auto it = running_.find(pid); it != running_.end()) return it->second.exec_id;
    pid = ppid;
    ppid = proc_status(pid).ppid;
  }
  return "";
}

// What an exec names, read from the caller's memory: the path, the argv, the environment's
// loader variables, and how far what was read can be trusted to be what the kernel reads next.
struct ExecRead {
  std::optional<std::string> path;
  Argv argv;
  Argv env;  // only the variables policy::is_read_at_exec keeps, as NAME=value
  std::vector<std::uint64_t> pages;
};

// The environment is read like the argv, within a page budget of its own (the kernel bounds
// both together, so one large one leaves the other small); what a larger one would hide is
// refused with it.
Argv loader_env(RemoteMemory& mem, std::uint64_t envp_addr) {
  Argv env = mem.argv_at(envp_addr);
  std::erase_if(env.words, [](const std::string& w) {
    const auto eq = w.find('=');
    return eq == std::string::npos || !policy::is_read_at_exec(std::string_view(w).substr(0, eq));
  });
  return env;
}

ExecRead read_exec(pid_t tid, std::uint64_t path_addr, std::uint64_t argv_addr,
                   std::uint64_t envp_addr) {
  RemoteMemory mem(tid), env_mem(tid);
  ExecRead r;
  r.path = mem.string_at(path_addr, kMaxPath);
  if (r.path) r.argv = mem.argv_at(argv_addr);
  if (r.path && r.argv.ok) r.env = loader_env(env_mem, envp_addr);
  r.pages = mem.pages();
  for (std::uint64_t page : env_mem.pages()) r.pages.push_back(page);
  return r;
}

std::vector<LoaderInput> loads_of(const Argv& env, const std::vector<LoaderInput>& options) {
  std::vector<LoaderInput> out;
  for (const std::string& w : env.words) {
    const auto eq = w.find('=');
    out.push_back(LoaderInput{w.substr(0, eq), w.substr(eq + 1), "environment"});
  }
  out.insert(out.end(), options.begin(), options.end());
  return out;
}

void Server::on_exec(const seccomp_notif& n) {
  const bool at = n.data.nr == __NR_execveat;
  const pid_t tid = static_cast<pid_t>(n.pid);
  const std::uint64_t path_addr = at ? n.data.args[1] : n.data.args[0];
  const std::uint64_t argv_addr = at ? n.data.args[2] : n.data.args[1];
  const std::uint64_t envp_addr = at ? n.data.args[3] : n.data.args[2];
  const int dirfd = at ? static_cast<int>(n.data.args[0]) : AT_FDCWD;
  const bool empty_path = at && (n.data.args[4] & AT_EMPTY_PATH) != 0;
  ExecRead read = read_exec(tid, path_addr, argv_addr, envp_addr);
  budget_.charge(read.pages.size() * 4096);
  if (!read.path) return (void)answer(n.id, false, EFAULT);
  if (!read.argv.ok && !read.argv.truncated) return (void)answer(n.id, false, EFAULT);
  if (!read.env.ok && !read.env.truncated) return (void)answer(n.id, false, EFAULT);
  if (!root_.valid()) {
    root_ = UniqueFd(open(("/proc/" + std::to_string(tid) + "/root").c_str(),
                          O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!root_.valid()) return (void)answer(n.id, false, errno == ENOENT ? ESRCH : errno);
  }
  Resolved file = resolve_exec(tid, root_.get(), *read.path, dirfd, empty_path, read.argv.words);
  if (file.error != 0) return (void)answer(n.id, false, file.error);  // the kernel's own answer
  const ProcStatus st = proc_status(tid);
  // It runs code of its own now, so an exec it made earlier is over: verified before this one.
  settle(st.tgid, tid);
  ExecRequest req;
  req.pid = st.tgid;
  req.memory =
      memory_exclusive(st.tgid, st, init_pid_) && pages_private_anonymous(st.tgid, read.pages)
          ? ExecMemory::kExclusive
          : ExecMemory::kShared;
  if (req.memory == ExecMemory::kShared) {
    // A second read, after the slow part: a thread rewriting the words meanwhile is caught.
    ExecRead again = read_exec(tid, path_addr, argv_addr, envp_addr);
    budget_.charge(again.pages.size() * 4096);
    if (again.path != read.path || again.argv.words != read.argv.words ||
        again.env.words != read.env.words)
      req.memory = ExecMemory::kChanged;
  }
  if (!still_waiting(n.id)) return;  // the caller died (or was killed) while we read
  req.exec_id = std::to_string(++next_id_);
  req.first = !first_done_;
  req.parent_exec = req.first ? "" : parent_of(st.tgid, st.ppid);
  req.argv = std::move(read.argv.words);
  req.argv_truncated = read.argv.truncated;
  req.loads = loads_of(read.env, file.loader_options);
  if (read.env.truncated)
    file.refusal = "its environment is larger than moat reads (4 MiB, 65536 variables), so moat "
                   "cannot tell what it makes the dynamic loader load";
  req.unnamed = file.unnamed;
  req.sha256 = std::move(file.sha256);
  req.path = std::move(*read.path);
  req.exe = std::move(file.exe);
  req.interpreter = std::move(file.interpreter);
  req.cwd = std::move(file.cwd);
  req.also = std::move(file.also);
  req.refusal = std::move(file.refusal);
  judge_and_answer(n.id, tid, st, req, file);
}

std::optional<PendingVerify> Server::plan_verify(pid_t tid, const ProcStatus& st, ExecRequest& req,
                                                 const Resolved& file) {
  const bool shared = req.memory == ExecMemory::kShared;
  const bool swappable = could_be_swapped(st.tgid, req.path, req.cwd, file.read_only) ||
                         names_through_process_state(req.path);
  // The program the dynamic loader is asked to load is opened by the loader, after the exec,
  // and /proc/<pid>/exe stays the loader: nothing after the fact can tell a swapped one.
  for (const ExecTarget& t : req.also)  // (on_exec moved `file`'s strings into `req`)
    if (t.loaded && could_be_swapped(st.tgid, t.path, req.cwd, t.read_only))
      req.refusal = "the dynamic loader would open " + moat::quoted(t.path) +
                    " itself, after moat's check, through a path the sandbox can change: name "
                    "a program on a read-only system path, or run it directly";
  if (!shared && !swappable) return std::nullopt;
  const auto before = exe_of(st.tgid);
  if (!before) return std::nullopt;  // gone: it will not run anything
  PendingVerify v;
  v.pid = st.tgid;
  v.tid = tid;
  v.image = {file.image_dev, file.image_ino};
  v.before = *before;
  v.check_argv = shared;
  v.until = v.next = Clock::now() + kVerifyWindow;
  if (v.image == v.before) {
    if (syscall(SYS_kcmp, st.tgid, st.ppid, KCMP_VM, 0, 0) == 0) v.sharer = st.ppid;
    v.old_memory = OldMemory(st.tgid);
    if (!v.old_memory.valid())
      req.refusal =
          "it execs its own program through a path that can be swapped, and moat cannot hold "
          "its memory to see the exec done (too many such execs wait at once)";
  }
  return v;
}

void Server::judge_and_answer(std::uint64_t id, pid_t tid, const ProcStatus& st, ExecRequest& req,
                              const Resolved& file) {
  // Before the judgement: what cannot be verified is refused, and recorded so.
  std::optional<PendingVerify> check = plan_verify(tid, st, req, file);
  ExecAnswer a;
  if (observer_) a = observer_->on_exec(req);
  // The watch's own refusals stand whatever the observer said (it was told why).
  if (req.memory == ExecMemory::kChanged || req.argv_truncated || !req.refusal.empty())
    a = ExecAnswer{false, EPERM};
  if (!a.allow) {
    ++stats_.refused;
    return (void)answer(id, false, a.error);
  }
  if (!answer(id, true, 0)) {
    // A signal interrupted the execve after the check (or the caller died): nothing ran.
    if (observer_)
      observer_->on_end(ExecEnd{req.exec_id, std::nullopt, std::nullopt, 0,
                                "did not run: its execve was interrupted before moat answered"});
    return;
  }
  ++stats_.execs;
  first_done_ = true;
  started(st.tgid, req.exec_id);
  if (check) {
    check->argv = std::move(req.argv);
    verify_.push_back(std::move(*check));
  }
}

void Server::started(pid_t pid, const std::string& exec_id) {
  auto it = running_.find(pid);
  if (it != running_.end()) {  // the process ran another program before: that one is over
    Program& old = it->second;
    if (!old.ended && observer_) observer_->on_end(ExecEnd{old.exec_id, std::nullopt, std::nullopt,
                std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - old.start)
                    .count(),
                "replaced by exec " + exec_id});
    old.exec_id = exec_id;
    old.start = Clock::now();
    old.code.reset();
    old.ended = false;
    return;
  }
  Program p{exec_id, UniqueFd(static_cast<int>(syscall(SYS_pidfd_open, pid, 0))), Clock::now(),
            std::nullopt, false};
  if (p.pidfd.valid()) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = static_cast<std::uint64_t>(pid) + 2;
    epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, p.pidfd.get(), &ev);
  }
  running_.emplace(pid, std::move(p));
}

void Server::on_pidfd(pid_t pid) {
  auto it = running_.find(pid);
  if (it == running_.end()) return;
  if (it->second.ended) {
    epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, it->second.pidfd.get(), nullptr);
    running_.erase(it);
    return;
  }
  ExecEnd end;
  end.exec_id = it->second.exec_id;
  end.duration_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - it->second.start)
          .count();
  {
    // No exit_group: its threads ended by the raw exit (the leader's code, kept), or a signal
    // ended it. /proc/<pid>/stat's exit_code (field 52) says which while it is a zombie; once
    // reaped, the leader's kept code is what its parent saw when there is one.
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    std::getline(in, line);
    const auto close = line.rfind(')');
    if (close != std::string::npos) {
      std::istringstream fields(line.substr(close + 2));
      std::string f;
      long status = -1;
      for (int i = 3; fields >> f; ++i)
        if (i == 52) status = std::stol(f);
      if (status >= 0 && (status & 0x7f) != 0) end.signal = static_cast<int>(status & 0x7f);
      if (status >= 0 && (status & 0x7f) == 0) end.code = static_cast<int>((status >> 8) & 0xff);
    }
    if (!end.code && !end.signal) end.code = it->second.code;
    if (!end.code && !end.signal) end.note = "ended by a signal (reaped before moat read which)";
  }
  epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, it->second.pidfd.get(), nullptr);
  running_.erase(it);
  if (observer_) observer_->on_end(end);
}

void Server::verify_pending() {
  const auto now = Clock::now();
  std::size_t kept = 0;
  for (std::size_t i = 0; i < verify_.size(); ++i) {
    PendingVerify& v = verify_[i];
    std::string why;
    const Verdict verdict = now < v.next ? Verdict::kWait : verify_one(v, now, false, &why);
    if (verdict == Verdict::kKill) kill_unverified(v.pid, why);
    if (verdict != Verdict::kWait) continue;
    if (now >= v.next && now >= v.until) v.next = now + kSlowPoll;
    if (kept != i) verify_[kept] = std::move(v);
    ++kept;
  }
  verify_.resize(kept);
}

int Server::verify_poll_ms() const {
  if (verify_.empty()) return 1000;
  const auto now = Clock::now();
  for (const PendingVerify& v : verify_)
    if (now < v.until) return 1;
  return static_cast<int>(kSlowPoll.count());
}

void Server::settle(pid_t pid, pid_t tid) {
  std::size_t kept = 0;
  for (std::size_t i = 0; i < verify_.size(); ++i) {
    PendingVerify& v = verify_[i];
    const auto exe = v.pid == pid ? exe_of(pid) : std::nullopt;
    if (v.pid != pid || (exe && !exec_done(v, *exe) && v.tid != tid)) {
      if (kept != i) verify_[kept] = std::move(v);
      ++kept;
      continue;
    }
    std::string why;
    if (verify_one(v, Clock::now(), true, &why) == Verdict::kKill) kill_unverified(pid, why);
  }
  verify_.resize(kept);
}

void Server::kill_unverified(pid_t pid, const std::string& why) {
  auto it = running_.find(pid);
  if (it == running_.end() || !it->second.pidfd.valid() || it->second.ended) return;
  syscall(SYS_pidfd_send_signal, it->second.pidfd.get(), SIGKILL, nullptr, 0);
  ++stats_.refused;
  if (observer_) observer_->on_end(ExecEnd{it->second.exec_id, std::nullopt, SIGKILL, 0, why});
  it->second.ended = true;  // its pidfd end is not a second end of the same exec
}

}  // namespace

ExecWatch::ExecWatch(UniqueFd listener, ExecObserver* observer, UniqueFd gate)
    : ExecWatch(observer) {
  attach(std::move(listener), std::move(gate));
}

ExecWatch::ExecWatch(ExecObserver* observer, double cpu_budget_s, BeforeProgram before_program)
    : wake_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)),
      observer_(observer),
      cpu_budget_s_(cpu_budget_s),
      before_program_(std::move(before_program)) {
  thread_ = std::thread([this] { serve(); });
}

ExecWatch::~ExecWatch() { finish(std::chrono::milliseconds(0)); }

void ExecWatch::attach(UniqueFd listener, UniqueFd gate) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (attached_) return;
    listener_ = std::move(listener);
    gate_ = std::move(gate);
    attached_ = true;
  }
  cv_.notify_all();
}

void ExecWatch::serve() {
  bool attached = false;
  {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return attached_ || stopping_.load(); });
    attached = attached_;
  }
  if (attached) {  // listener_ and gate_ are not written again once attached
    Server server(listener_.get(), wake_.get(), gate_.get(), observer_, stats_, stopping_,
                  cpu_budget_s_, over_, before_program_);
    server.run();
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
  }
  cv_.notify_all();
}

std::string ExecWatch::over_budget() const {
  return over_.flag.load(std::memory_order_acquire) ? over_.why : std::string();
}

ExecWatchStats ExecWatch::finish(std::chrono::milliseconds grace) {
  if (!thread_.joinable()) return stats_;
  {
    // The thread ends on its own once the listener hangs up and every program is over.
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, grace, [this] { return done_ || !attached_; });
    stopping_.store(true);
  }
  cv_.notify_all();
  std::uint64_t one = 1;
  (void)::write(wake_.get(), &one, sizeof one);
  thread_.join();
  return stats_;
}

}  // namespace moat::sandbox
