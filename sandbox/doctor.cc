// sandbox/doctor.cc: probing the machine's isolation layers (see doctor.h). Every namespace
// probe forks a child that tries the unshare, so moatd itself never changes.
#include "sandbox/doctor.h"

#include <fcntl.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/host_defaults.h"
#include "base/log.h"
#include "base/sys.h"
#include "sandbox/landlock.h"
#include "sandbox/net_proxy.h"
#include "sandbox/ns_net.h"
#include "sandbox/ns_user.h"
#include "sandbox/sys.h"

namespace moat::sandbox {
namespace {

nlohmann::json verdict(bool ok, const std::string& reason) {
  return {{"ok", ok}, {"reason", reason}};
}

// Returns 0 or the errno of unshare(flags) tried in a child (after a user namespace when
// with_user is set, which is how the session creates everything).
int try_unshare_in_child(int flags, bool with_user) {
  pid_t pid = fork();
  if (pid < 0) return errno;
  if (pid == 0) {
    if (with_user && unshare(CLONE_NEWUSER) != 0) _exit(errno & 0xff);
    _exit(unshare(flags) == 0 ? 0 : (errno & 0xff));
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  return WIFEXITED(status) ? WEXITSTATUS(status) : EIO;
}

nlohmann::json probe_idmap() {
  if (geteuid() != 0)
    return verdict(true, "not needed: rootless sessions map the caller's own uid to 0");
  auto userns = make_userns_fd(IdMap{0, kUnprivilegedUid}, IdMap{0, kUnprivilegedGid});
  if (!userns) return verdict(false, userns.error().message());
  auto tree = sys::clone_tree("/tmp", false);
  if (!tree) return verdict(false, tree.error().message());
  mount_attr attr{};
  attr.attr_set = MOUNT_ATTR_IDMAP;
  attr.userns_fd = static_cast<std::uint64_t>(userns->get());
  if (mount_setattr(tree->get(), "", AT_EMPTY_PATH, &attr, sizeof attr) != 0)
    return verdict(false,
                   std::string("mount_setattr(MOUNT_ATTR_IDMAP) on /tmp: ") + std::strerror(errno));
  return verdict(true, "idmapped mounts work on /tmp's filesystem");
}

// What a session with network needs: the proxy's listener on the loopback of a new network
// namespace (sandbox/net_proxy.h), made in a child that then exits.
nlohmann::json probe_net_proxy() {
  pid_t pid = fork();
  if (pid < 0) return verdict(false, std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    if (unshare(CLONE_NEWUSER) != 0 || unshare(CLONE_NEWNET) != 0) _exit(errno & 0xff);
    if (!bring_up_loopback()) _exit(EIO);
    auto listener = listen_on_loopback(kProxyPort);
    _exit(listener ? 0 : (listener.error().code & 0xff));
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  const int err = WIFEXITED(status) ? WEXITSTATUS(status) : EIO;
  if (err != 0)
    return verdict(false, "listening on 127.0.0.1:" + std::to_string(kProxyPort) +
                              " in a new network namespace: " + std::strerror(err));
  return verdict(true, "the filtering proxy listens on 127.0.0.1:" + std::to_string(kProxyPort) +
                           " in the session's network namespace; moatd resolves and connects");
}

nlohmann::json probe_cgroup(const char* path) {
  if (access(path, W_OK) == 0) return verdict(true, std::string(path) + " is writable");
  return verdict(false, std::string(path) + ": " + std::strerror(errno));
}

}  // namespace

nlohmann::json doctor_report() {
  nlohmann::json r;
  r["running_as_root"] = geteuid() == 0;
  int user = try_unshare_in_child(CLONE_NEWUSER, false);
  r["user_ns"] =
      verdict(user == 0, user == 0 ? "unshare(CLONE_NEWUSER) works"
                                   : std::string("unshare(CLONE_NEWUSER): ") + std::strerror(user));
  const std::pair<int, const char*> kOthers[] = {
      {CLONE_NEWNS, "mount_ns"}, {CLONE_NEWPID, "pid_ns"}, {CLONE_NEWNET, "net_ns"},
      {CLONE_NEWIPC, "ipc_ns"},  {CLONE_NEWUTS, "uts_ns"}, {CLONE_NEWCGROUP, "cgroup_ns"}};
  for (const auto& [flag, name] : kOthers) {
    int err = try_unshare_in_child(flag, true);
    r[name] = verdict(err == 0, err == 0 ? "works inside a user namespace"
                                         : std::string("unshare: ") + std::strerror(err));
  }
  bool seccomp = prctl(PR_GET_SECCOMP, 0, 0, 0, 0) >= 0;
  std::uint32_t action = SECCOMP_RET_KILL_PROCESS;
  bool kill_process = syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &action) == 0;
  r["seccomp"] = verdict(seccomp && kill_process,
                         seccomp ? (kill_process ? "filter mode with SECCOMP_RET_KILL_PROCESS"
                                                 : "no SECCOMP_RET_KILL_PROCESS (kernel < 4.14)")
                                 : std::string("prctl(PR_GET_SECCOMP): ") + std::strerror(errno));
  int abi = landlock_abi();
  // The ABI is its own field ("abi"), which `moat doctor` prints after the reason: the reason
  // does not say it again (issue 27 item 20: "ABI 7 (...) (ABI 7)").
  r["landlock"] = verdict(abi > 0, abi >= 6  ? "with signal and abstract unix socket scoping"
                                   : abi > 0 ? "no scoping: needs ABI 6"
                                             : "landlock_create_ruleset: not available");
  r["landlock"]["abi"] = abi;
  r["cgroup_v1"] = probe_cgroup("/sys/fs/cgroup/pids");
  r["cgroup_v2"] = probe_cgroup("/sys/fs/cgroup/unified/cgroup.procs");
  r["idmap"] = probe_idmap();
  r["net_proxy"] = probe_net_proxy();
  return r;
}

namespace {

// moatd --version's output, its stdout on a pipe, killed when it says nothing for 10 s. The
// child gets an empty environment: `--version` needs none.
Result<std::string> moatd_version_output(const std::string& exe, int& status) {
  MOAT_ASSIGN_OR_RETURN(sys::FdPair out, sys::make_pipe());
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out.second.get(), STDOUT_FILENO);
  const std::string flag = "--version";
  char* argv[] = {const_cast<char*>(exe.c_str()), const_cast<char*>(flag.c_str()), nullptr};
  char* envp[] = {nullptr};
  pid_t pid = -1;
  const int err = posix_spawnp(&pid, exe.c_str(), &actions, nullptr, argv, envp);
  posix_spawn_file_actions_destroy(&actions);
  if (err != 0) return fail(Error::from_errno("posix_spawnp", err, exe));
  out.second.reset();
  pollfd p{out.first.get(), POLLIN, 0};
  const bool answered = ::poll(&p, 1, 10000) > 0;
  if (!answered) ::kill(pid, SIGKILL);
  auto text = answered ? sys::read_to_end(out.first.get(), 4096) : Result<std::string>("");
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!answered) return fail(Error::msg(exe + " --version said nothing in 10 s"));
  return text;
}

}  // namespace

nlohmann::json probe_moatd(const std::string& exe) {
  int status = 0;
  auto out = moatd_version_output(exe, status);
  nlohmann::json v;
  const std::string want = std::string("moatd ") + MOAT_VERSION + "\n";
  if (!out)
    v = verdict(false, "cannot start " + exe + ": " + out.error().message() +
                           " (set MOATD_BIN to moatd's path, or install it next to moat)");
  else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    v = verdict(false, exe + " --version failed (status " + std::to_string(status) + ")");
  else if (*out != want)
    v = verdict(false, exe + " is another version (" + moat::quoted(*out) + ", moat is " +
                           MOAT_VERSION + ")");
  else
    v = verdict(true, exe + " starts (" + MOAT_VERSION + ")");
  v["path"] = exe;
  return v;
}

std::string doctor_verdict(const nlohmann::json& report, bool& ready) {
  std::string missing;
  for (const char* needed : {"mount_ns", "pid_ns", "net_ns", "seccomp", "moatd"})
    if (report.contains(needed) && !report[needed].value("ok", false))
      missing += (missing.empty() ? "" : ", ") + std::string(needed);
  ready = missing.empty();
  return ready ? "ready: moat can run sessions on this machine"
               : "NOT READY: " + missing + " (see above; moat run would fail)";
}

}  // namespace moat::sandbox
