// tools/atomic_write.h: replacing a file's content atomically inside the sandbox (runs in
// the worker): a temporary file in the same directory, fsync, rename over the target,
// fsync of the directory. A reader sees the old content or the new one, never a mix.
#pragma once

#include <string>
#include <string_view>

#include "base/result.h"

namespace moat::tools {

// `canonical` comes from resolve_in_root(); every directory on the way is opened with
// RESOLVE_NO_SYMLINKS, so a symlink planted after the policy check fails with ELOOP.
// Missing parents are created when create_parents is set (ENOENT otherwise). An existing
// file keeps its permission bits (and owner, where allowed).
Result<void> replace_file(const std::string& canonical, std::string_view content,
                          bool create_parents);

}  // namespace moat::tools
