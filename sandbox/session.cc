// sandbox/session.cc: Session::create and the moatd side of a session (see session.h): it
// forks the namespace keeper, writes its id maps, and talks to the session init per call.
//
// Processes: moatd -> keeper (moatd's child, in the new namespaces but the host pid
// namespace; it only waits) -> init (pid 1 of the new pid namespace) -> workers. Each link
// has PR_SET_PDEATHSIG=SIGKILL, so moatd dying kills the keeper, which kills the init, and
// the kernel kills every process of a pid namespace whose init dies.
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <condition_variable>
#include <mutex>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "base/byte_strings.h"
#include "base/log.h"
#include "sandbox/cgroup.h"
#include "sandbox/exec_watch.h"
#include "sandbox/ns_user.h"
#include "sandbox/protect.h"
#include "sandbox/session.h"
#include "sandbox/session_init.h"
#include "sandbox/sys.h"
#include "sandbox/worker.h"
#include "sandbox/workspace.h"

namespace moat::sandbox {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kKeeperCtlFd = 3;
constexpr int kKeeperTreeFd = 4;

struct NamespaceLayer {
  int flag;
  const char* name;
};
// The user namespace comes first: it is what lets an unprivileged moatd create the others,
// and every later namespace is owned by it.
constexpr NamespaceLayer kNamespaces[] = {{CLONE_NEWUSER, "user_ns"},    {CLONE_NEWNS, "mount_ns"},
                                          {CLONE_NEWPID, "pid_ns"},      {CLONE_NEWNET, "net_ns"},
                                          {CLONE_NEWIPC, "ipc_ns"},      {CLONE_NEWUTS, "uts_ns"},
                                          {CLONE_NEWCGROUP, "cgroup_ns"}};

// The call's fds on moatd's side.
struct CallFds {
  UniqueFd channel;
  UniqueFd status;
  UniqueFd io;
  pid_t host_pid = -1;
};

[[noreturn]] void fail_in_child(int ctl, const std::string& message) {
  std::string msg = ctl_byte(CtlMsg::kError) + message;
  auto sent = sys::send_with_fds(ctl, msg.data(), msg.size(), nullptr, 0);
  (void)sent;
  _exit(1);
}

// Keeps exactly the control socket, the workspace tree and the binds' sources: the init must
// not hold moatd's client sockets or log files open (a peer would never see EOF). Each moves to
// a fixed number (binds from kKeeperTreeFd + 1 on) by way of a copy at 100 or above, so no move
// overwrites a descriptor still to be moved.
void keep_only_session_fds(int& ctl, int& tree, std::vector<SessionBind>& binds) {
  int c = fcntl(ctl, F_DUPFD_CLOEXEC, 100);
  int t = tree >= 0 ? fcntl(tree, F_DUPFD_CLOEXEC, 100) : -1;
  for (SessionBind& b : binds) b.fd = fcntl(b.fd, F_DUPFD_CLOEXEC, 100);
  if (c < 0 || dup3(c, kKeeperCtlFd, O_CLOEXEC) < 0) _exit(1);
  ctl = kKeeperCtlFd;
  if (t >= 0) {
    if (dup3(t, kKeeperTreeFd, O_CLOEXEC) < 0) _exit(1);
    tree = kKeeperTreeFd;
  }
  int next = kKeeperTreeFd + 1;
  for (SessionBind& b : binds) {
    if (b.fd < 0 || dup3(b.fd, next, O_CLOEXEC) < 0) _exit(1);
    b.fd = next++;
  }
  syscall(SYS_close_range, next, ~0U, 0);
  if (tree < 0) close(kKeeperTreeFd);
  int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null_fd >= 0) {
    dup2(null_fd, 0);
    dup2(null_fd, 1);
    close(null_fd);
  }
}

// Without an idmapped tree from moatd (rootless, or idmap skipped), the keeper clones the
// workspace itself, from its cwd: an fd opened before unshare(CLONE_NEWNS) names a mount of
// moatd's namespace, which open_tree refuses (EINVAL), but unshare moves the cwd onto the
// same directory's copy in the new namespace. So the clone is of the directory moatd opened
// and checked, never of whatever its path names by then.
Result<UniqueFd> clone_workspace_from_cwd() { return sys::clone_tree_at(AT_FDCWD, ".", true); }

[[noreturn]] void run_keeper_in_child(SessionConfig config, int ctl, int tree, int workspace,
                                      pid_t moatd, std::shared_ptr<const BpfProgram> filter) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != moatd) _exit(1);  // moatd died before the line above
  if (fchdir(workspace) != 0)        // before keep_only_session_fds closes it
    fail_in_child(ctl, std::string("mount_ns: fchdir(workspace): ") + std::strerror(errno));
  keep_only_session_fds(ctl, tree, config.binds);
  clearenv();  // nothing of moatd's environment is consulted inside the session
  if (int err = become_namespace_owner_in_child(config.unprivileged_uid, config.unprivileged_gid))
    fail_in_child(ctl, std::string("user_ns: owner ids: ") + std::strerror(err));
  prctl(PR_SET_PDEATHSIG, SIGKILL);  // a change of credentials cleared it
  if (getppid() != moatd) _exit(1);
  for (const auto& ns : kNamespaces)
    if (unshare(ns.flag) != 0)
      fail_in_child(ctl, std::string(ns.name) + ": unshare: " + std::strerror(errno));
  char c = ctl_byte(CtlMsg::kUnshared);
  if (!sys::send_with_fds(ctl, &c, 1, nullptr, 0)) _exit(1);
  if (::read(ctl, &c, 1) != 1 || c != ctl_byte(CtlMsg::kMapsWritten)) _exit(1);
  if (setresgid(0, 0, 0) != 0 || setresuid(0, 0, 0) != 0)
    fail_in_child(ctl, std::string("user_ns: setresuid: ") + std::strerror(errno));
  const char* counter = "";
  if (int err = lower_user_counters_in_child(&counter))
    fail_in_child(ctl, std::string("user_ns: ") + counter + ": " + std::strerror(err));
  UniqueFd cloned;
  if (tree < 0) {
    auto made = clone_workspace_from_cwd();
    if (!made) fail_in_child(ctl, "mount_ns: workspace: " + made.error().message());
    cloned = std::move(*made);
    tree = cloned.get();
  }
  pid_t init = fork();  // pid 1 of the new pid namespace
  if (init < 0) fail_in_child(ctl, std::string("pid_ns: fork: ") + std::strerror(errno));
  if (init == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    InitContext ctx{std::move(config), ctl, tree, std::move(filter)};
    run_session_init(ctx);
  }
  close(ctl);
  if (!cloned.valid() && tree >= 0) close(tree);
  cloned.reset();
  int status = 0;
  while (waitpid(init, &status, 0) < 0 && errno == EINTR) {}
  _exit(0);
}

// PR_SET_PDEATHSIG fires when the parent *thread* exits, not the parent process. Forking the
// keeper from a thread that lives as long as moatd ties each session to moatd's lifetime, not
// to that of whichever (per-connection) thread asked for it.
class LifetimeForker {
 public:
  static LifetimeForker& get() {
    // Never destroyed: it outlives every session. A forked copy of moatd has the object but
    // not its thread, so each process makes its own.
    static std::mutex mu;
    static LifetimeForker* forker = nullptr;
    static pid_t owner = -1;
    std::lock_guard<std::mutex> lock(mu);
    if (forker == nullptr || owner != getpid()) {
      forker = new LifetimeForker();
      owner = getpid();
    }
    return *forker;
  }
  // Forks from the lifetime thread; the child runs child_main (which must not return).
  pid_t fork_with(const std::function<void()>& child_main) {
    std::lock_guard<std::mutex> one_at_a_time(call_mu_);
    std::unique_lock<std::mutex> lock(mu_);
    job_ = &child_main;
    cv_.notify_all();
    cv_.wait(lock, [&] { return job_ == nullptr; });
    return result_;
  }

 private:
  LifetimeForker() {
    std::thread([this] { loop(); }).detach();
  }
  [[noreturn]] void loop() {
    for (;;) {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return job_ != nullptr; });
      pid_t pid = fork();
      if (pid == 0) {
        (*job_)();
        _exit(1);
      }
      result_ = pid < 0 ? -errno : pid;
      job_ = nullptr;
      cv_.notify_all();
    }
  }
  std::mutex call_mu_, mu_;
  std::condition_variable cv_;
  const std::function<void()>* job_ = nullptr;
  pid_t result_ = -1;
};

Result<std::string> recv_message(int ctl, UniqueFd* fd = nullptr) {
  char buf[65536];
  std::size_t nfds = 0;
  MOAT_ASSIGN_OR_RETURN(std::size_t n,
                        sys::recv_with_fds(ctl, buf, sizeof buf, fd, fd ? 1 : 0, &nfds));
  if (n == 0) return fail("session init exited during setup");
  return std::string(buf, n);
}

// The idmapped workspace (moatd as root): files of the workspace's owner appear owned by the
// sandbox's uid 0, and what the sandbox writes lands on disk as that owner. Without it the
// sandbox's unprivileged host uid could not write a root- or user-owned workspace.
// Built from the workspace fd, never from its path: the owner mapped to the sandbox's root is
// the owner moatd checked.
// A bind's source (moat sandbox exec --bind) is idmapped the same way, by the workspace's owner:
// inside, the sandbox's root is that user in every tree it sees.
Result<UniqueFd> make_idmapped_tree(int fd, int workspace, const SandboxIds& ids,
                                    const std::string& what) {
  struct stat st;
  if (::fstat(workspace, &st) != 0) return fail(Error::from_errno("fstat", errno, "workspace"));
  MOAT_ASSIGN_OR_RETURN(UniqueFd userns, make_userns_fd(IdMap{st.st_uid, ids.uid.outside},
                                                        IdMap{st.st_gid, ids.gid.outside}));
  MOAT_ASSIGN_OR_RETURN(UniqueFd tree, sys::clone_tree_at(fd, "", true));
  mount_attr attr{};
  attr.attr_set = MOUNT_ATTR_IDMAP;
  attr.userns_fd = static_cast<std::uint64_t>(userns.get());
  if (mount_setattr(tree.get(), "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof attr) != 0)
    return fail(Error::from_errno("mount_setattr(MOUNT_ATTR_IDMAP)", errno, what));
  return tree;
}

Result<UniqueFd> make_idmapped_workspace(int ws, const SandboxIds& ids) {
  return make_idmapped_tree(ws, ws, ids, "workspace");
}

pid_t child_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/children");
  pid_t child = -1;
  in >> child;
  return child;
}

pid_t host_pid_of(int pidfd) {
  std::ifstream in("/proc/self/fdinfo/" + std::to_string(pidfd));
  std::string key;
  while (in >> key) {
    if (key == "Pid:") {
      pid_t pid = -1;
      in >> pid;
      return pid;
    }
  }
  return -1;
}

// The placeholder messages the init sent since kReady (see session_init.h), without blocking.
std::vector<Placeholder> drain_placeholders(int ctl) {
  std::vector<Placeholder> out;
  char buf[8192];
  for (;;) {
    ssize_t n = ::recv(ctl, buf, sizeof buf, MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return out;
    if (auto p = parse_placeholder_message(std::string_view(buf, static_cast<std::size_t>(n))))
      out.push_back(std::move(*p));
  }
}

// The call's io: a pipe for an exec's output, a socket for a handler's or create's data; none
// when the command writes to the caller's own fds (ExecSpec::stdio).
Result<sys::FdPair> call_io(bool exec_kind, const int* stdio) {
  if (stdio != nullptr) return sys::FdPair{};
  if (exec_kind) return sys::make_pipe();
  return sys::make_socketpair(SOCK_STREAM);
}

nlohmann::json exec_request(const ExecSpec& spec) {
  nlohmann::json req = {
      {"kind", "exec"}, {"argv", spec.argv}, {"cwd", spec.cwd}, {"env", spec.env}};
  if (spec.stdio[0] >= 0 && spec.terminal) req["terminal"] = true;
  return req;
}

const char* limit_for_signal(int sig) {
  if (sig == SIGXCPU) return "cpu";
  if (sig == SIGXFSZ) return "file_size";
  return "";
}

class LinuxSession final : public Session {
 public:
  LinuxSession(SessionConfig config, UniqueFd workspace, pid_t keeper, pid_t init, UniqueFd ctl,
               std::string describe, ScopedCgroup cgroup, Clock::time_point created)
      : config_(std::move(config)),
        workspace_(std::move(workspace)),
        keeper_(keeper),
        init_(init),
        ctl_(std::move(ctl)),
        describe_(std::move(describe)),
        created_(created),
        cgroup_(std::move(cgroup)) {
    if (auto pidfd = sys::pidfd_open(init_); pidfd) init_pidfd_ = std::move(*pidfd);
  }

  ~LinuxSession() override {
    kill(keeper_, SIGKILL);  // the init follows through its parent-death signal
    int status;
    while (waitpid(keeper_, &status, 0) < 0 && errno == EINTR) {}
    // Once the init is gone, so is every process of the session: nothing inside can still
    // report a placeholder, or write into one, while they are removed.
    if (init_pidfd_.valid()) {
      pollfd p{init_pidfd_.get(), POLLIN, 0};
      while (poll(&p, 1, 5000) < 0 && errno == EINTR) {}
    }
    std::vector<Placeholder> created = drain_placeholders(ctl_.get());
    ctl_.reset();
    remove_all_placeholders(std::move(created));
  }

  Result<tools::ExecStatus> exec(const ExecSpec& spec,
                                 const std::function<void(std::string_view)>& on_output,
                                 StopFlags stop) override;
  Result<std::string> run_handler(std::string_view request) override;
  Result<UniqueFd> create_file(const std::string& sandbox_path) override;
  std::string describe_json() const override { return describe_; }
  pid_t init_pid() const override { return init_; }
  UniqueFd take_net_listener() override { return std::move(net_listener_); }
  UniqueFd net_listener_;  // set once by create

 private:
  // Sends the request, waits until the worker reached its exec or handler (check_status:
  // an exec worker's own exec waits on the watch, which must be served first), then reads
  // the init's start record.
  // With stdio, the worker's fds 0-2 are those instead of /dev/null and an output pipe.
  // spec.durable runs as ExecSpec says (a failure returns before the watch is served).
  Result<CallFds> start(nlohmann::json request, bool exec_kind,
                        std::unique_ptr<ExecWatch>* watch = nullptr,
                        const ExecSpec* spec = nullptr);
  // Every exec worker of this session waits at its exec for the watch's answer: the exec
  // watch is a layer it may not run without, and no test leaves it out.
  bool exec_waits_for_the_watch() const {
    return config_.allow_without.count("exec_watch") == 0 &&
           config_.test_skip_step != step_name(Step::kExecWatch);
  }
  // EOF without a record: the worker reached exec (or its handler). A record names the
  // step that failed. An exec worker first sends the exec watch's listener: it is served
  // from then on (into *watch), since the worker's own exec already waits on it.
  Result<void> check_status(int status_fd, std::unique_ptr<ExecWatch>* watch = nullptr);
  Result<void> send_request(sys::FdPair& channel, sys::FdPair& status, sys::FdPair& io,
                            const int* stdio, const nlohmann::json& request);
  Result<int> wait_exit(int channel, Clock::time_point deadline);
  double session_seconds_left() const;

  SessionConfig config_;
  // Each placeholder in the directory it was made in: the workspace's by their relative path,
  // a bind's by their sandbox path (session_init.cc, mask_binds), in the bind's source.
  void remove_all_placeholders(std::vector<Placeholder> created) {
    std::vector<std::vector<Placeholder>> per_root(config_.binds.size() + 1);
    for (Placeholder& p : created) {
      std::size_t root = 0, longest = 0;  // 0: the workspace; i + 1: bind i
      for (std::size_t i = 0; i < config_.binds.size(); ++i) {
        const std::string& t = config_.binds[i].target;
        if (t.size() > longest && p.relative.rfind(t + "/", 0) == 0)
          root = i + 1, longest = t.size();
      }
      if (root > 0) p.relative = p.relative.substr(longest + 1);
      if (root > 0 || p.relative.empty() || p.relative[0] != '/')
        per_root[root].push_back(std::move(p));
    }
    for (std::size_t r = 0; r < per_root.size(); ++r) {
      if (per_root[r].empty()) continue;
      const int dir = r == 0 ? workspace_.get() : bind_dirs_[r - 1].get();
      const std::string& name = r == 0 ? config_.workspace : config_.binds[r - 1].source;
      if (auto removed = remove_placeholders(dir, name, std::move(per_root[r])); !removed)
        MOAT_LOG_WARN("session end: %s", removed.error().message().c_str());
    }
  }

 public:
  std::vector<UniqueFd> bind_dirs_;  // set once by create: each bind's source as checked

 private:
  UniqueFd workspace_;  // the directory the session was built from; placeholders are removed in it
  pid_t keeper_;
  pid_t init_;
  UniqueFd init_pidfd_;  // readable once the init has exited
  UniqueFd ctl_;
  std::string describe_;
  // Taken before the fork, so it is earlier than the init's own session timer: when the init
  // ends the session for its wall time, moatd's clock agrees that the time is up.
  Clock::time_point created_;
  ScopedCgroup cgroup_;  // declared last: removed after the keeper is reaped
};

// Hands the init the worker's ends of the call's sockets (and the command's own stdio), then
// the request on the call's channel.
Result<void> LinuxSession::send_request(sys::FdPair& channel, sys::FdPair& status, sys::FdPair& io,
                                        const int* stdio, const nlohmann::json& request) {
  int fds[5] = {channel.second.get(), status.second.get(), io.second.get(), -1, -1};
  if (stdio != nullptr) std::copy(stdio, stdio + 3, fds + 2);
  const char kind = ctl_byte(stdio != nullptr ? CtlMsg::kCallStdio : CtlMsg::kCall);
  // One SOCK_SEQPACKET record per call: concurrent callers cannot interleave.
  if (auto sent = sys::send_with_fds(ctl_.get(), &kind, 1, fds, stdio != nullptr ? 5 : 3); !sent)
    return fail(sent.error().with_context("session init"));
  channel.second.reset();
  status.second.reset();
  io.second.reset();
  // Lossless: argv and paths that are not UTF-8 (rg's and fd's, naming a canonical path moatd
  // judged) reach the worker with their exact bytes; session_init decodes them.
  std::string frame = dump_lossless(request);
  std::uint32_t len = static_cast<std::uint32_t>(frame.size());
  MOAT_TRY(sys::write_all(channel.first.get(), &len, sizeof len));
  MOAT_TRY(sys::write_all(channel.first.get(), frame.data(), frame.size()));
  return {};
}

Result<CallFds> LinuxSession::start(nlohmann::json request, bool exec_kind,
                                    std::unique_ptr<ExecWatch>* watch, const ExecSpec* spec) {
  const int* stdio = spec != nullptr && spec->stdio[0] >= 0 ? spec->stdio : nullptr;
  const bool durable = spec != nullptr && spec->durable;
  const bool held = durable && exec_waits_for_the_watch();
  if (durable && !held) MOAT_TRY(spec->durable());
  MOAT_ASSIGN_OR_RETURN(sys::FdPair channel, sys::make_socketpair(SOCK_STREAM));
  // Set before the init can send: the kStarted record's credentials carry the worker's pid.
  const int on = 1;
  if (setsockopt(channel.first.get(), SOL_SOCKET, SO_PASSCRED, &on, sizeof on) != 0)
    return fail(Error::from_errno("setsockopt(SO_PASSCRED)", errno));
  // A socket, not a pipe: the exec watch's listener comes back on it (worker.cc).
  MOAT_ASSIGN_OR_RETURN(sys::FdPair status, sys::make_socketpair(SOCK_SEQPACKET));
  MOAT_ASSIGN_OR_RETURN(sys::FdPair io, call_io(exec_kind, stdio));
  if (!config_.test_skip_step.empty()) request["skip"] = config_.test_skip_step;
  // Its thread starts while the init prepares the worker, whose own exec waits on it.
  if (watch != nullptr && exec_kind)
    *watch = std::make_unique<ExecWatch>(spec != nullptr ? spec->observer : nullptr,
                                         static_cast<double>(config_.limits.cpu_time_s));
  MOAT_TRY(send_request(channel, status, io, stdio, request));
  // The worker gets ready meanwhile and its exec waits on the watch, which is not served
  // yet. A failure returns here: the status socket closes with the listener unread in it,
  // which fails the worker's exec (ENOSYS), and the channel's EOF has the init kill it.
  if (held) MOAT_TRY(spec->durable());
  // The init sends its start record once start_worker returns, which for an exec worker
  // (vfork) is after the exec: the watch is served before it is waited for. A call the init
  // refused before any worker closes the status socket unused: the record then says why.
  auto reached = check_status(status.first.get(), watch);
  ChannelRecord rec{};
  UniqueFd pidfd;
  std::size_t nfds = 0;
  pid_t cred_pid = -1;
  if (config_.test_delay_start_record_ms > 0)
    std::this_thread::sleep_for(std::chrono::milliseconds(config_.test_delay_start_record_ms));
  MOAT_ASSIGN_OR_RETURN(std::size_t n, sys::recv_with_fds(channel.first.get(), &rec, sizeof rec,
                                                          &pidfd, 1, &nfds, &cred_pid));
  if (n != sizeof rec) return fail("session init closed the call (session ended?)");
  if (rec.type == ChannelMsg::kFailed && rec.value == E2BIG)
    return fail(
        Error{E2BIG, "protected paths: the workspace has more than " +
                         std::to_string(config_.max_protect_walk_entries) +
                         " entries, so the per-call walk cannot find every path the "
                         "policy's globs protect or hide; the call is refused (fail closed)"});
  if (rec.type == ChannelMsg::kFailed)
    return fail(Error::from_errno("session init: start worker", rec.value));
  if (!reached) return fail(reached.error());
  CallFds call{std::move(channel.first), std::move(status.first), std::move(io.first)};
  // Credentials that name the init itself mean it could not name the worker (see
  // send_record in session_init.cc): then the pidfd, read while the worker still lives.
  call.host_pid = cred_pid > 0 && cred_pid != init_ ? cred_pid
                  : pidfd.valid()                   ? host_pid_of(pidfd.get())
                                                    : -1;
  return call;
}

Result<void> LinuxSession::check_status(int status_fd, std::unique_ptr<ExecWatch>* watch) {
  for (;;) {
    StatusRecord rec{};
    UniqueFd fds[2];  // the listener, and the end of the worker's exec gate (worker.cc)
    std::size_t nfds = 0;
    MOAT_ASSIGN_OR_RETURN(std::size_t n,
                          sys::recv_with_fds(status_fd, &rec, sizeof rec, fds, 2, &nfds));
    if (n == 0) return {};
    if (n != sizeof rec) return fail("worker status: short record");
    UniqueFd& listener = fds[0];
    const bool is_listener = rec.step == static_cast<std::int32_t>(Step::kExecWatch) &&
                             rec.err == 0 && nfds == 2 && listener.valid();
    if (!is_listener)
      return fail(
          Error{rec.err, std::string("worker step ") + step_name(static_cast<Step>(rec.step))});
    // Nobody to serve it (a handler worker never sends one): closing it fails every exec
    // under it (ENOSYS), which is the closed way to fail.
    if (watch != nullptr && *watch) (*watch)->attach(std::move(listener), std::move(fds[1]));
  }
}

double LinuxSession::session_seconds_left() const {
  if (config_.limits.session_wall_time_s <= 0) return 1e9;
  std::chrono::duration<double> used = Clock::now() - created_;
  return config_.limits.session_wall_time_s - used.count();
}

// Waits for the init's kExited record; returns the wait status. EOF = the session ended.
Result<int> LinuxSession::wait_exit(int channel, Clock::time_point deadline) {
  for (;;) {
    pollfd p{channel, POLLIN, 0};
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    int rc = poll(&p, 1, static_cast<int>(std::max<long long>(0, left.count())));
    if (rc == 0) {
      char k = kKillRequest;
      (void)::send(channel, &k, 1, MSG_NOSIGNAL);
      deadline = Clock::now() + std::chrono::seconds(5);
      continue;
    }
    if (rc < 0) {
      if (errno == EINTR) continue;
      return fail(Error::from_errno("poll", errno));
    }
    ChannelRecord rec{};
    MOAT_ASSIGN_OR_RETURN(bool got, sys::read_exact(channel, &rec, sizeof rec, true));
    if (!got) return fail("session ended during the call");
    if (rec.type == ChannelMsg::kExited) return rec.value;
  }
}

// Counts a call's output against the session's ceiling and passes on what is under it.
struct OutputSink {
  std::uint64_t ceiling;  // 0: none
  const std::function<void(std::string_view)>& forward;
  tools::ExecStatus& out;

  // False when this chunk passed the ceiling: it is not passed on, and out.limit says so.
  bool take(const char* data, ssize_t n) {
    out.output_bytes += static_cast<std::uint64_t>(n);
    if (ceiling && out.output_bytes > ceiling) {
      if (out.limit.empty()) out.limit = "output";
      return false;
    }
    if (forward) forward(std::string_view(data, static_cast<std::size_t>(n)));
    return true;
  }
};

// Drains what the pipe still holds: the group was killed, so EOF follows at once unless a
// process escaped the group with setsid, which we do not wait for.
void drain_output(int io, OutputSink& sink) {
  char buf[65536];
  for (;;) {
    pollfd p{io, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) return;
    ssize_t n = ::read(io, buf, sizeof buf);
    if (n <= 0 || !sink.take(buf, n)) return;
  }
}

void record_wait_status(int wait_status, tools::ExecStatus& out) {
  if (WIFEXITED(wait_status)) out.exit_code = WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) {
    out.signal = WTERMSIG(wait_status);
    if (out.limit.empty()) out.limit = limit_for_signal(out.signal);
  }
}

// A requested timeout only shortens the session's wall time, never extends it.
double call_timeout(double requested, double wall) {
  return requested > 0 && (wall <= 0 || requested < wall) ? requested : wall;
}

Result<tools::ExecStatus> LinuxSession::exec(const ExecSpec& spec,
                                             const std::function<void(std::string_view)>& on_output,
                                             StopFlags stop) {
  tools::ExecStatus out;
  const auto t0 = Clock::now();
  const bool passed = spec.stdio[0] >= 0;
  std::unique_ptr<ExecWatch> watch;
  MOAT_ASSIGN_OR_RETURN(CallFds call, start(exec_request(spec), true, &watch, &spec));
  out.pid = call.host_pid;
  const double timeout = call_timeout(spec.timeout_s, config_.limits.wall_time_s);
  const auto deadline = t0 + std::chrono::duration_cast<Clock::duration>(
                                 std::chrono::duration<double>(timeout > 0 ? timeout : 1e9));
  bool killed = false, out_open = !passed;
  auto kill_call = [&] {
    char k = kKillRequest;
    if (!killed) (void)::send(call.channel.get(), &k, 1, MSG_NOSIGNAL);
    killed = true;
  };
  OutputSink sink{config_.limits.output_bytes, on_output, out};
  int wait_status = -1;
  char buf[65536];
  while (wait_status < 0) {
    pollfd fds[2] = {{call.channel.get(), POLLIN, 0}, {out_open ? call.io.get() : -1, POLLIN, 0}};
    int rc = poll(fds, 2, 50);  // the tick at which cancel and the deadline are checked
    if (rc < 0 && errno != EINTR) return fail(Error::from_errno("poll", errno));
    if (fds[1].revents) {
      ssize_t n = ::read(call.io.get(), buf, sizeof buf);
      if (n <= 0) out_open = false;
      else if (!sink.take(buf, n)) kill_call();
    }
    if (fds[0].revents) {
      ChannelRecord rec{};
      MOAT_ASSIGN_OR_RETURN(bool got, sys::read_exact(call.channel.get(), &rec, sizeof rec, true));
      if (!got) {
        if (session_seconds_left() > 0) return fail("session init died during the call");
        out.limit = "session_wall_time";
        out.signal = SIGKILL;
        break;
      }
      if (rec.type == ChannelMsg::kExited) wait_status = rec.value;
    }
    if (!killed && Clock::now() >= deadline) {
      out.timed_out = true;
      // The call's own timeout when it was below the policy's ceiling, else that ceiling
      // (a timeout at or above it is the ceiling's: call_timeout).
      const double wall = config_.limits.wall_time_s;
      const bool own = spec.timeout_s > 0 && (wall <= 0 || spec.timeout_s < wall);
      if (out.limit.empty()) out.limit = own ? "timeout" : "wall_time";
      kill_call();
    }
    if (!killed && stop.raised()) {
      out.cancelled = true;
      kill_call();
    }
    // moatd's own CPU checking the call's execs counts against the call (exec_budget.h).
    if (!killed && watch) {
      if (std::string why = watch->over_budget(); !why.empty()) {
        out.limit = "exec_watch_cpu";
        kill_call();
      }
    }
  }
  if (wait_status >= 0) {
    if (out_open) drain_output(call.io.get(), sink);
    record_wait_status(wait_status, out);
  }
  // The init killed what the call left behind; their ends are recorded before the call's.
  if (watch) watch->finish(std::chrono::seconds(2));
  out.duration = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0);
  return out;
}

Result<std::string> LinuxSession::run_handler(std::string_view request) {
  MOAT_ASSIGN_OR_RETURN(CallFds call, start({{"kind", "handler"}}, false));
  const auto deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(
                         config_.limits.wall_time_s > 0 ? config_.limits.wall_time_s : 1e9));
  auto sent = sys::write_all(call.io.get(), request.data(), request.size());
  ::shutdown(call.io.get(), SHUT_WR);
  std::string response;
  char buf[65536];
  for (;;) {
    pollfd p{call.io.get(), POLLIN, 0};
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0 || poll(&p, 1, static_cast<int>(left.count())) == 0) {
      char k = kKillRequest;
      (void)::send(call.channel.get(), &k, 1, MSG_NOSIGNAL);
      return fail(Error::from_errno("sandbox handler", ETIMEDOUT));
    }
    ssize_t n = ::read(call.io.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    response.append(buf, static_cast<std::size_t>(n));
  }
  MOAT_ASSIGN_OR_RETURN(int status, wait_exit(call.channel.get(), deadline));
  if (!sent) return fail(sent.error().with_context("sandbox handler: send request"));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return fail("sandbox handler: worker ended with wait status " + std::to_string(status));
  return response;
}

Result<UniqueFd> LinuxSession::create_file(const std::string& sandbox_path) {
  MOAT_ASSIGN_OR_RETURN(CallFds call, start({{"kind", "create"}, {"path", sandbox_path}}, false));
  std::int32_t err = 0;
  UniqueFd fd;
  std::size_t nfds = 0;
  auto got = sys::recv_with_fds(call.io.get(), &err, sizeof err, &fd, 1, &nfds);
  auto status = wait_exit(call.channel.get(), Clock::now() + std::chrono::seconds(30));
  if (!got) return fail(got.error());
  if (*got != sizeof err) return fail("create_file: worker ended without an answer");
  if (err != 0 || nfds != 1) return fail(Error::from_errno("create_file", err, sandbox_path));
  (void)status;
  return fd;
}

// The caller's workspace fd (a copy: the session keeps it), or the path opened here once.
Result<UniqueFd> open_session_workspace(const SessionConfig& config) {
  if (config.workspace_fd >= 0) return sys::duplicate(config.workspace_fd);
  auto opened = open_workspace(config.workspace, std::nullopt);
  if (!opened) return fail(opened.error().with_context("workspace " + config.workspace));
  return std::move(opened->fd);
}

Result<void> check_allow_without(const std::set<std::string>& names) {
  for (const std::string& name : names) {
    bool known = false;
    for (const char* layer : kSkippableLayers) known = known || name == layer;
    if (known) continue;
    bool is_namespace = false;
    for (const auto& ns : kNamespaces) is_namespace = is_namespace || name == ns.name;
    if (is_namespace)
      return fail("allow_without: " + name + " cannot be skipped: the session is its namespaces");
    return fail("allow_without: " + moat::quoted(name) +
                " is not a layer that can be skipped (seccomp, landlock, idmap, cgroup)");
  }
  return {};
}

// The workspace tree the session binds: idmapped to the sandbox's ids when moatd is root (an
// invalid fd when rootless: the keeper clones the workspace itself). A failure is refused
// unless the policy allows running without "idmap", which `skipped` then records.
Result<UniqueFd> session_tree(int workspace, const SandboxIds& ids, const SessionConfig& config,
                              nlohmann::json& skipped) {
  if (ids.rootless) return UniqueFd();
  auto idmapped = make_idmapped_workspace(workspace, ids);
  if (idmapped) return std::move(*idmapped);
  if (!config.allow_without.count("idmap")) return fail(idmapped.error().with_context("idmap"));
  skipped["idmap"] = idmapped.error().message();
  return UniqueFd();
}

// What the keeper gets for each bind (SessionBind::fd): when moatd is root, a detached tree
// cloned here from the checked fd, idmapped as the workspace is (plainly cloned when the policy
// lets the session run without idmap and it failed); rootless, a copy of the checked fd, which
// the init compares with what the path names in its own namespace (ns_mount.h, BindPlan).
// `checked` gets a copy of each checked fd first: the session removes placeholders in them.
Result<std::vector<UniqueFd>> bind_sources(int workspace, const SandboxIds& ids,
                                           SessionConfig& config, bool idmapped,
                                           std::vector<UniqueFd>* checked) {
  std::vector<UniqueFd> out;
  for (SessionBind& b : config.binds) {
    MOAT_ASSIGN_OR_RETURN(UniqueFd dir, sys::duplicate(b.fd));
    checked->push_back(std::move(dir));
    Result<UniqueFd> fd = ids.rootless ? sys::duplicate(b.fd)
                          : idmapped   ? make_idmapped_tree(b.fd, workspace, ids, b.source)
                                       : sys::clone_tree_at(b.fd, "", true);
    if (!fd) return fail(fd.error().with_context("bind " + b.source));
    b.fd = fd->get();
    b.fd_is_tree = !ids.rootless;
    out.push_back(std::move(*fd));
  }
  return out;
}

// The keeper joins the session's cgroup before it forks the init: every process of the
// session inherits it, and none can leave (cgroup.procs of the parent is not writable).
// Inactive when cgroups are unavailable or fail and the policy allows running without. On a
// failure it reaps the keeper first, so the cgroup is removed once its processes are gone.
Result<ScopedCgroup> session_cgroup(pid_t keeper, const SessionConfig& config,
                                    nlohmann::json& skipped, const std::function<void()>& reap) {
  auto made = ScopedCgroup::create("moat-" + std::to_string(keeper), config.limits);
  if (made && !made->active()) {
    skipped["cgroup"] = ScopedCgroup::unavailable_reason();
    return ScopedCgroup();
  }
  Error err;
  if (made) {
    auto attached = made->attach(keeper);
    if (attached) return std::move(*made);
    err = attached.error();
  } else {
    err = made.error();
  }
  if (!config.allow_without.count("cgroup")) {
    reap();
    return fail(err.with_context("cgroup"));
  }
  skipped["cgroup"] = err.message();
  return made ? std::move(*made) : ScopedCgroup();
}

// What `describe()` reports: the init's own description plus what moatd set up around it.
nlohmann::json describe_session(const std::string& init_describe, const SandboxIds& ids,
                                const ScopedCgroup& cgroup, const nlohmann::json& skipped) {
  auto describe = nlohmann::json::parse(init_describe, nullptr, false);
  for (const auto& ns : kNamespaces) describe[ns.name] = true;
  describe["rootless"] = ids.rootless;
  describe["uid_map"] = ids.uid.line().substr(0, ids.uid.line().size() - 1);
  describe["idmap"] = !ids.rootless && !skipped.contains("idmap");
  describe["cgroup"] = cgroup.active() && !skipped.contains("cgroup");
  if (cgroup.active()) describe["cgroup_dirs"] = cgroup.dirs();
  if (!describe.contains("skipped")) describe["skipped"] = nlohmann::json::object();
  for (const auto& [k, v] : skipped.items()) describe["skipped"][k] = v;
  return describe;
}

}  // namespace

Result<std::unique_ptr<Session>> Session::create(const SessionConfig& in) {
  SessionConfig config = in;
  MOAT_TRY(check_allow_without(config.allow_without));
  // Resolved once: from here on the session uses only this fd, never the path again.
  MOAT_ASSIGN_OR_RETURN(UniqueFd workspace, open_session_workspace(in));
  config.workspace_fd = -1;  // borrowed from the caller: not valid in the session's lifetime
  const SandboxIds ids = choose_sandbox_ids(config.unprivileged_uid, config.unprivileged_gid);
  nlohmann::json skipped = nlohmann::json::object();
  MOAT_ASSIGN_OR_RETURN(UniqueFd tree, session_tree(workspace.get(), ids, config, skipped));
  std::vector<UniqueFd> bind_dirs;  // the checked sources: placeholders are removed in them
  MOAT_ASSIGN_OR_RETURN(
      std::vector<UniqueFd> bind_fds,
      bind_sources(workspace.get(), ids, config, !skipped.contains("idmap"), &bind_dirs));
  MOAT_ASSIGN_OR_RETURN(sys::FdPair ctl, sys::make_socketpair(SOCK_SEQPACKET));
  const pid_t moatd = getpid();
  const auto created = Clock::now();
  const int child_end = ctl.second.get();  // the child keeps only its end (keep_only_session_fds)
  const int tree_fd = tree.valid() ? tree.get() : -1;
  const int workspace_fd = workspace.get();
  // Ready by now when moatd started compiling it (precompile_filter); waited for before the
  // fork, since the compiling thread does not exist in the child.
  std::shared_ptr<const BpfProgram> filter = precompiled_filter(config.network);
  pid_t keeper = LifetimeForker::get().fork_with(
      [&] { run_keeper_in_child(config, child_end, tree_fd, workspace_fd, moatd, filter); });
  if (keeper < 0) return fail(Error::from_errno("fork", -keeper, "session"));
  ctl.second.reset();
  tree.reset();
  bind_fds.clear();
  auto reap = [&] {
    kill(keeper, SIGKILL);
    int st;
    while (waitpid(keeper, &st, 0) < 0 && errno == EINTR) {}
  };
  auto first = recv_message(ctl.first.get());
  if (!first || *first != std::string(1, ctl_byte(CtlMsg::kUnshared))) {
    reap();
    return fail(first ? Error::msg(first->substr(1)) : first.error());
  }
  MOAT_ASSIGN_OR_RETURN(ScopedCgroup cgroup, session_cgroup(keeper, config, skipped, reap));
  if (auto maps = write_id_maps_in_parent(keeper, ids.uid, ids.gid); !maps) {
    reap();
    return fail(maps.error().with_context("user_ns"));
  }
  const char go = ctl_byte(CtlMsg::kMapsWritten);
  (void)sys::write_all(ctl.first.get(), &go, 1);
  UniqueFd net_listener;  // kReady carries it when config.net_proxy_port is set
  auto ready = recv_message(ctl.first.get(), &net_listener);
  if (!ready || ready->empty() || (*ready)[0] != ctl_byte(CtlMsg::kReady)) {
    reap();
    return fail(ready ? Error::msg(ready->substr(1)) : ready.error());
  }
  const auto describe = describe_session(ready->substr(1), ids, cgroup, skipped);
  pid_t init = child_of(keeper);
  auto session = std::make_unique<LinuxSession>(std::move(config), std::move(workspace), keeper,
                                                init, std::move(ctl.first), dump_lossless(describe),
                                                std::move(cgroup), created);
  session->net_listener_ = std::move(net_listener);
  session->bind_dirs_ = std::move(bind_dirs);
  return std::unique_ptr<Session>(std::move(session));
}

}  // namespace moat::sandbox
