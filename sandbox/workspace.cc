// sandbox/workspace.cc: the workspace resolved once (see workspace.h).
//
// Why once: moatd may be root and serve any local user (`moatd --socket`). Checking a path's
// owner and then resolving the path again lets the user swap the directory for a symlink in
// between (renameat2 RENAME_EXCHANGE), and moatd would lend them a root-owned directory,
// idmapped so that they are its owner inside the sandbox (issue 12, item 1). An fd cannot be
// swapped: the owner check, the mount and every host-side use go through the same one.
#include "sandbox/workspace.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <string>
#include <string_view>

#include "base/sys.h"
#include "base/workspace_path.h"

namespace moat::sandbox {
namespace {

Result<Workspace> open_checked(const std::string& path, std::optional<uid_t> owner) {
  if (!is_normalized_absolute(path))
    return fail(Error{EINVAL,
                      "not an absolute path without '.', '..', '//' or a trailing '/' "
                      "(\"/\" itself is refused)"});
  auto opened = sys::open_no_symlinks(path, O_PATH | O_DIRECTORY);
  if (!opened && opened.error().code == ELOOP)
    return fail(Error{ELOOP, "a component is a symlink: name the directory by its real path"});
  if (!opened) return fail(opened.error());
  Workspace ws{std::move(*opened), path};
  struct stat st {};
  if (::fstat(ws.fd.get(), &st) != 0) return fail(Error::from_errno("fstat", errno, path));
  if (!S_ISDIR(st.st_mode)) return fail(Error{ENOTDIR, "not a directory"});
  if (owner && st.st_uid != *owner)
    return fail(Error{EPERM, "owned by uid " + std::to_string(st.st_uid) +
                                 ", not by the connecting user (uid " + std::to_string(*owner) +
                                 ")"});
  MOAT_TRY(check_still_named(ws.fd.get(), path));
  ws.uid = st.st_uid;
  ws.gid = st.st_gid;
  return ws;
}

}  // namespace

Result<void> check_still_named(int fd, const std::string& path) {
  char buf[PATH_MAX];
  const std::string link = "/proc/self/fd/" + std::to_string(fd);
  ssize_t n = ::readlink(link.c_str(), buf, sizeof buf);
  if (n < 0) return fail(Error::from_errno("readlink", errno, link));
  if (std::string_view(buf, static_cast<std::size_t>(n)) != path)
    return fail(Error{EAGAIN, "it was moved while it was being opened"});
  return {};
}

Result<Workspace> open_workspace(const std::string& path, std::optional<uid_t> owner) {
  auto ws = open_checked(path, owner);
  if (!ws) return fail(workspace_refused(path, ws.error()));
  return ws;
}

}  // namespace moat::sandbox
