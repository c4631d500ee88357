// sandbox/sys.cc: the sandbox-only raw fd-returning syscalls wrapped into UniqueFd (see sys.h).
#include "sandbox/sys.h"

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace moat::sandbox::sys {

Result<UniqueFd> clone_tree_at(int dirfd, const std::string& rel, bool recursive) {
  unsigned flags = OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | (recursive ? AT_RECURSIVE : 0);
  if (rel.empty()) flags |= AT_EMPTY_PATH;
  int fd = static_cast<int>(syscall(SYS_open_tree, dirfd, rel.c_str(), flags));
  if (fd < 0) return fail(Error::from_errno("open_tree", errno, rel));
  return UniqueFd(fd);
}

Result<UniqueFd> clone_tree(const std::string& path, bool recursive) {
  return clone_tree_at(AT_FDCWD, path, recursive);
}

Result<UniqueFd> landlock_create_ruleset(const void* attr, std::size_t size) {
  int fd = static_cast<int>(syscall(SYS_landlock_create_ruleset, attr, size, 0));
  if (fd < 0) return fail(Error::from_errno("landlock_create_ruleset", errno));
  return UniqueFd(fd);  // the kernel sets O_CLOEXEC on ruleset fds
}

Result<void> make_dirs(const std::string& path, mode_t mode) {
  if (::mkdir(path.c_str(), mode) == 0 || errno == EEXIST) return {};
  const std::size_t slash = path.find_last_of('/');
  if (errno != ENOENT || slash == std::string::npos || slash == 0)
    return fail(Error::from_errno("mkdir", errno, path));
  MOAT_TRY(make_dirs(path.substr(0, slash), mode));
  if (::mkdir(path.c_str(), mode) != 0 && errno != EEXIST)
    return fail(Error::from_errno("mkdir", errno, path));
  return {};
}

}  // namespace moat::sandbox::sys
