// tools/resolve.h: path canonicalisation inside the sandbox's root (runs in the worker).
// Paths mean what they mean to the sandboxed code: symlinks resolve with openat2's
// RESOLVE_IN_ROOT against "/" of the calling process, which inside a worker is the
// session's root, so a planted symlink can never name a host path. Where openat2 is
// filtered (ENOSYS), plain openat in the worker is the equivalent: its root is the same.
#pragma once

#include <sys/types.h>

#include <string>

#include "base/result.h"
#include "base/unique_fd.h"

namespace moat::tools {

struct Resolved {
  std::string path;     // canonical: absolute, no symlinks, no "." or ".."
  bool exists = false;  // false: the canonical parent exists, the rest will be created
  bool is_dir = false;
};

// Resolves `path` (relative paths against `cwd`). For a path that does not exist, the
// longest existing prefix is resolved and the missing names are appended, so two
// spellings of one new file through a symlinked directory give one canonical path.
// Fails with ENOTDIR when a prefix is not a directory, EINVAL for ".." after a missing
// directory, ENOENT for an empty path.
Result<Resolved> resolve_in_root(const std::string& path, const std::string& cwd);

// Opens a canonical path refusing any symlink on the way (RESOLVE_NO_SYMLINKS): if the
// sandboxed code swapped a component for a symlink after the policy check, this fails
// with ELOOP instead of following it.
Result<UniqueFd> open_canonical(const std::string& canonical, int flags, mode_t mode = 0);

// Tests: forces the openat(2)-per-component equivalent used where seccomp hides openat2.
void set_openat2_enabled_for_testing(bool enabled);

// The path of an open fd, as the calling process sees it (/proc/self/fd).
Result<std::string> fd_path(int fd);

}  // namespace moat::tools
