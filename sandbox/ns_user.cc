// sandbox/ns_user.cc: user namespace id maps (see ns_user.h).
#include "sandbox/ns_user.h"

#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "base/sys.h"

namespace moat::sandbox {
namespace {

Result<void> write_proc_file(pid_t pid, const char* name, const std::string& text) {
  std::string path = "/proc/" + std::to_string(pid) + "/" + name;
  MOAT_ASSIGN_OR_RETURN(UniqueFd fd, sys::open_path(path, O_WRONLY));
  // One write(2): the kernel accepts a map only when it arrives in a single write.
  ssize_t n = ::write(fd.get(), text.data(), text.size());
  if (n != static_cast<ssize_t>(text.size())) return fail(Error::from_errno("write", errno, path));
  return {};
}

// Fork-safe file I/O for the keeper: fixed buffers, no heap. Returns 0 or an errno.
int read_number(const char* path, long* out) {
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  char buf[32] = {};
  ssize_t n = ::read(fd, buf, sizeof buf - 1);
  int err = n < 0 ? errno : 0;
  ::close(fd);
  if (err == 0) *out = std::strtol(buf, nullptr, 10);
  return err;
}

int write_number(const char* path, long value) {
  int fd = ::open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  char buf[32];
  int len = std::snprintf(buf, sizeof buf, "%ld\n", value);
  ssize_t n = ::write(fd, buf, static_cast<std::size_t>(len));
  int err = n == len ? 0 : (n < 0 ? errno : EIO);
  ::close(fd);
  return err;
}

// Distribution switches that refuse (Debian's unprivileged_userns_clone = 0) or strip
// (Ubuntu's AppArmor restriction = 1) a user namespace made by a non-root uid: there the
// keeper keeps root's ids, and only the lowered counters bound what a session takes.
bool unprivileged_userns_refused() {
  long v = 1;
  if (read_number("/proc/sys/kernel/unprivileged_userns_clone", &v) == 0 && v == 0) return true;
  v = 0;
  return read_number("/proc/sys/kernel/apparmor_restrict_unprivileged_userns", &v) == 0 && v != 0;
}

}  // namespace

int become_namespace_owner_in_child(uid_t uid, gid_t gid) {
  if (geteuid() != 0 || unprivileged_userns_refused()) return 0;
  if (setgroups(1, &gid) != 0 || setresgid(gid, gid, gid) != 0 || setresuid(uid, uid, uid) != 0)
    return errno;
  return 0;
}

int lower_user_counters_in_child(const char** failed) {
  static char path[96];
  for (const UserCounter& c : kUserCounters) {
    std::snprintf(path, sizeof path, "/proc/sys/user/%s", c.name);
    if (::access(path, F_OK) != 0) continue;  // an older kernel without this counter
    long value = c.value;
    if (c.host_file != nullptr) {
      if (int err = read_number(c.host_file, &value); err != 0) {
        *failed = c.host_file;
        return err;
      }
      value = value / 4 > 0 ? value / 4 : 1;
    }
    if (int err = write_number(path, value); err != 0) {
      *failed = path;
      return err;
    }
  }
  return 0;
}

std::string IdMap::line() const {
  return std::to_string(inside) + " " + std::to_string(outside) + " 1\n";
}

SandboxIds choose_sandbox_ids(uid_t unprivileged_uid, gid_t unprivileged_gid) {
  SandboxIds ids;
  if (geteuid() == 0) {
    ids.uid = IdMap{0, unprivileged_uid};
    ids.gid = IdMap{0, unprivileged_gid};
  } else {
    ids.uid = IdMap{0, geteuid()};
    ids.gid = IdMap{0, getegid()};
    ids.rootless = true;
  }
  return ids;
}

Result<void> write_id_maps_in_parent(pid_t pid, const IdMap& uid, const IdMap& gid) {
  MOAT_TRY(write_proc_file(pid, "uid_map", uid.line()));
  MOAT_TRY(write_proc_file(pid, "setgroups", "deny\n"));
  MOAT_TRY(write_proc_file(pid, "gid_map", gid.line()));
  return {};
}

Result<UniqueFd> make_userns_fd(const IdMap& uid, const IdMap& gid) {
  MOAT_ASSIGN_OR_RETURN(sys::FdPair ready, sys::make_pipe());
  MOAT_ASSIGN_OR_RETURN(sys::FdPair done, sys::make_pipe());
  pid_t child = fork();
  if (child < 0) return fail(Error::from_errno("fork", errno));
  if (child == 0) {
    // Child: async-signal-safe calls only (moatd is multi-threaded).
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    // Keeps only its two pipe ends. It waits for EOF on `done`, so it must not hold the
    // write end of another session's helper's `done` (forked by another thread at the same
    // moment), nor that session's workspace, audit log or client socket: two helpers holding
    // each other's pipes both waited forever (issue 26 item 15). Our own copy of done's write
    // end goes with the rest.
    const int keep[] = {ready.second.get(), done.first.get()};
    if (sys::close_fds_except_in_child(keep, 2) != 0) _exit(1);
    char c = unshare(CLONE_NEWUSER) == 0 ? 'u' : 'e';
    if (::write(ready.second.get(), &c, 1) != 1) _exit(1);
    ssize_t ignored = ::read(done.first.get(), &c, 1);  // EOF when the parent is done
    (void)ignored;
    _exit(0);
  }
  ready.second.reset();
  done.first.reset();
  auto reap = [&] {
    done.second.reset();
    int status;
    while (waitpid(child, &status, 0) < 0 && errno == EINTR) {}
  };
  char c = 0;
  if (::read(ready.first.get(), &c, 1) != 1 || c != 'u') {
    reap();
    return fail(Error::from_errno("unshare(CLONE_NEWUSER)", EPERM, "idmap helper"));
  }
  auto maps = write_id_maps_in_parent(child, uid, gid);
  Result<UniqueFd> fd =
      maps ? sys::open_path("/proc/" + std::to_string(child) + "/ns/user", O_RDONLY)
           : Result<UniqueFd>(fail(maps.error()));
  reap();
  return fd;
}

}  // namespace moat::sandbox
