// sandbox/ns_user.cc: user namespace id maps (see ns_user.h).
#include "sandbox/ns_user.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sandbox/sys.h"

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

}  // namespace

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
    // Child: async-signal-safe calls only (moatd may be multi-threaded).
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    done.second.reset();  // else our own copy keeps the pipe from reaching EOF
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
    while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
  };
  char c = 0;
  if (::read(ready.first.get(), &c, 1) != 1 || c != 'u') {
    reap();
    return fail(Error::from_errno("unshare(CLONE_NEWUSER)", EPERM, "idmap helper"));
  }
  auto maps = write_id_maps_in_parent(child, uid, gid);
  Result<UniqueFd> fd = maps ? sys::open_path("/proc/" + std::to_string(child) + "/ns/user",
                                              O_RDONLY)
                             : Result<UniqueFd>(fail(maps.error()));
  reap();
  return fd;
}

}  // namespace moat::sandbox
