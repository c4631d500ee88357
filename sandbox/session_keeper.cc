// sandbox/session_keeper.cc: the keeper's fork and what it does in the child (see
// session_keeper.h).
#include "sandbox/session_keeper.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <system_error>
#include <utility>

#include "base/sys.h"
#include "base/unique_fd.h"
#include "sandbox/init_contract.h"
#include "sandbox/ns_user.h"
#include "sandbox/session_init.h"
#include "sandbox/session_pool_config.h"
#include "sandbox/sys.h"

namespace moat::sandbox {

const NamespaceLayer kNamespaces[7] = {{CLONE_NEWUSER, "user_ns"},    {CLONE_NEWNS, "mount_ns"},
                                       {CLONE_NEWPID, "pid_ns"},      {CLONE_NEWNET, "net_ns"},
                                       {CLONE_NEWIPC, "ipc_ns"},      {CLONE_NEWUTS, "uts_ns"},
                                       {CLONE_NEWCGROUP, "cgroup_ns"}};

namespace {

constexpr int kKeeperCtlFd = 3;
constexpr int kKeeperTreeFd = 4;

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

// The namespaces a keeper unshares before moatd writes its id maps: all of them, but a pooled
// keeper leaves the mount namespace until its workspace is known (it becomes its cwd first).
void unshare_namespaces(int ctl, bool but_mount) {
  for (const auto& ns : kNamespaces) {
    if (but_mount && ns.flag == CLONE_NEWNS) continue;
    if (unshare(ns.flag) != 0)
      fail_in_child(ctl, std::string(ns.name) + ": unshare: " + std::strerror(errno));
  }
}

// The ids: the keeper becomes its user namespace's owner, unshares, and once moatd wrote the
// maps becomes root inside with the namespace's counters lowered.
void become_root_in_child(const SessionConfig& config, int ctl, pid_t moatd, bool but_mount) {
  if (int err = become_namespace_owner_in_child(config.unprivileged_uid, config.unprivileged_gid))
    fail_in_child(ctl, std::string("user_ns: owner ids: ") + std::strerror(err));
  prctl(PR_SET_PDEATHSIG, SIGKILL);  // a change of credentials cleared it
  if (getppid() != moatd) _exit(1);
  unshare_namespaces(ctl, but_mount);
  char c = ctl_byte(CtlMsg::kUnshared);
  if (!sys::send_with_fds(ctl, &c, 1, nullptr, 0)) _exit(1);
  if (::read(ctl, &c, 1) != 1 || c != ctl_byte(CtlMsg::kMapsWritten)) _exit(1);
  if (setresgid(0, 0, 0) != 0 || setresuid(0, 0, 0) != 0)
    fail_in_child(ctl, std::string("user_ns: setresuid: ") + std::strerror(errno));
  const char* counter = "";
  if (int err = lower_user_counters_in_child(&counter))
    fail_in_child(ctl, std::string("user_ns: ") + counter + ": " + std::strerror(err));
}

// Forks the init (pid 1 of the new pid namespace) with the session's tree, and waits for it.
[[noreturn]] void fork_init_in_child(SessionConfig config, int ctl, int tree) {
  UniqueFd cloned;
  if (tree < 0) {
    auto made = clone_workspace_from_cwd();
    if (!made) fail_in_child(ctl, "mount_ns: workspace: " + made.error().message());
    cloned = std::move(*made);
    tree = cloned.get();
  }
  pid_t init = fork();
  if (init < 0) fail_in_child(ctl, std::string("pid_ns: fork: ") + std::strerror(errno));
  if (init == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    InitContext ctx{std::move(config), ctl, tree};
    run_session_init(ctx);
  }
  close(ctl);
  if (!cloned.valid() && tree >= 0) close(tree);
  cloned.reset();
  int status = 0;
  while (waitpid(init, &status, 0) < 0 && errno == EINTR) {}
  _exit(0);
}

[[noreturn]] void run_keeper_in_child(SessionConfig config, int ctl, int tree, int workspace,
                                      pid_t moatd) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != moatd) _exit(1);  // moatd died before the line above
  if (fchdir(workspace) != 0)        // before keep_only_session_fds closes it
    fail_in_child(ctl, std::string("mount_ns: fchdir(workspace): ") + std::strerror(errno));
  keep_only_session_fds(ctl, tree, config.binds);
  clearenv();  // nothing of moatd's environment is consulted inside the session
  become_root_in_child(config, ctl, moatd, false);
  fork_init_in_child(std::move(config), ctl, tree);
}

// A pooled keeper: everything but the mount namespace now, the rest once kFinish names the
// workspace (its cwd before unshare(CLONE_NEWNS), as for any keeper).
[[noreturn]] void run_pooled_keeper_in_child(SessionConfig config, int ctl, pid_t moatd) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != moatd) _exit(1);
  int no_tree = -1;
  keep_only_session_fds(ctl, no_tree, config.binds);  // nothing of moatd's: its clients' sockets
  clearenv();
  become_root_in_child(config, ctl, moatd, true);
  auto finish = receive_finish(ctl, config);
  if (!finish) fail_in_child(ctl, finish.error().message());
  config = std::move(finish->config);
  UniqueFd workspace = std::move(finish->workspace), tree = std::move(finish->tree);
  // Only a keeper without moatd's tree clones the workspace from its cwd (rootless: the keeper
  // is the workspace's owner). With a tree (moatd as root) the keeper, by now the sandbox's
  // unprivileged uid, may not even search the workspace; the init binds the tree.
  if (!tree.valid() && fchdir(workspace.get()) != 0)
    fail_in_child(ctl, std::string("mount_ns: fchdir(workspace): ") + std::strerror(errno));
  workspace.reset();
  int tree_fd = tree.valid() ? tree.release() : -1;
  keep_only_session_fds(ctl, tree_fd, config.binds);
  if (unshare(CLONE_NEWNS) != 0)
    fail_in_child(ctl, std::string("mount_ns: unshare: ") + std::strerror(errno));
  fork_init_in_child(std::move(config), ctl, tree_fd);
}

// A pooled keeper of moatd as root: every namespace now, and the init forked at once, which
// builds what does not depend on the workspace and then waits for kFinish itself (its tree
// and binds come from moatd as detached trees, which any mount namespace can attach).
[[noreturn]] void run_keeper_with_init_ahead_in_child(SessionConfig config, int ctl, pid_t moatd) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != moatd) _exit(1);
  int no_tree = -1;
  keep_only_session_fds(ctl, no_tree, config.binds);
  clearenv();
  become_root_in_child(config, ctl, moatd, false);
  pid_t init = fork();
  if (init < 0) fail_in_child(ctl, std::string("pid_ns: fork: ") + std::strerror(errno));
  if (init == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    InitContext ctx{std::move(config), ctl, -1};
    run_session_init_ahead(ctx);
  }
  close(ctl);
  int status = 0;
  while (waitpid(init, &status, 0) < 0 && errno == EINTR) {}
  _exit(0);
}

}  // namespace

Result<std::unique_ptr<Keeper>> Keeper::start(const KeeperStart& start) {
  std::unique_ptr<Keeper> keeper(new Keeper());
  Keeper* k = keeper.get();
  // No thread to spare (EAGAIN: pids.max, RLIMIT_NPROC) fails this session alone: escaping
  // the pool's refill thread, std::system_error was std::terminate of moatd.
  try {
    k->thread_ =
        std::jthread([k, &start](std::stop_token stop) { k->forking_thread(stop, start); });
  } catch (const std::system_error& e) {
    return fail(Error::from_errno("start the keeper's thread", e.code().value(), "session"));
  }
  std::unique_lock<std::mutex> lock(k->mu_);
  k->cv_.wait(lock, [k] { return k->forked_; });
  if (k->pid_ < 0) {
    const int err = -k->pid_;
    lock.unlock();
    return fail(Error::from_errno("fork", err, "session"));
  }
  return keeper;
}

// Forks, then waits until the session ends it: the keeper's parent-death signal is this
// thread's end. `start` is read only before forked_ is set (Keeper::start waits for that).
void Keeper::forking_thread(std::stop_token stop, const KeeperStart& start) {
  pid_t pid = fork();
  if (pid == 0 && start.pooled && start.init_ahead)
    run_keeper_with_init_ahead_in_child(*start.config, start.ctl, start.moatd);
  if (pid == 0 && start.pooled) run_pooled_keeper_in_child(*start.config, start.ctl, start.moatd);
  if (pid == 0)
    run_keeper_in_child(*start.config, start.ctl, start.tree, start.workspace, start.moatd);
  const int err = errno;
  std::unique_lock<std::mutex> lock(mu_);
  pid_ = pid < 0 ? -err : pid;
  forked_ = true;
  cv_.notify_all();
  cv_.wait(lock, stop, [] { return false; });
}

void Keeper::end() {
  if (!thread_.joinable()) return;
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    int status;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {}
  }
  thread_.request_stop();
  thread_.join();
}

}  // namespace moat::sandbox
