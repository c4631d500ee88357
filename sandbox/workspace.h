// sandbox/workspace.h: the workspace a session runs on, resolved once: opened without following
// a symlink at any component and checked on the fd, which every later use then goes through.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

#include "base/result.h"
#include "base/unique_fd.h"

namespace moat::sandbox {

struct Workspace {
  UniqueFd fd;       // O_PATH|O_DIRECTORY: this directory, whatever its path names later
  std::string path;  // the path it was opened by; it named this directory at that moment
  uid_t uid = 0;     // its owner and group (fstat of fd)
  gid_t gid = 0;
};

// Opens path, which must be absolute and normalized (no NUL, no ".", ".." or empty component,
// no trailing "/": the text is then exactly what the kernel walks), with openat2
// RESOLVE_NO_SYMLINKS, and checks on the fd that it is a directory other than "/", owned by
// `owner` when one is given, and still reached by path (not renamed meanwhile). Errors: EINVAL
// (not absolute, not normalized, "/"), ELOOP (a component is a symlink), ENOTDIR, ENOENT,
// EPERM (owned by another uid), EAGAIN (moved while it was opened), each refused through
// workspace_refused (base/workspace_path.h): "workspace '<path>': <why>".
Result<Workspace> open_workspace(const std::string& path, std::optional<uid_t> owner);

// The path the kernel gives fd now (d_path) is `path`: unless a component was renamed after
// the walk that opened it, the text checked is where fd is. EAGAIN otherwise.
Result<void> check_still_named(int fd, const std::string& path);

}  // namespace moat::sandbox
