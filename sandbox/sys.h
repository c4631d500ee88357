// sandbox/sys.h: the raw syscalls only the sandbox makes (detached mount trees, landlock
// rulesets, each fd a UniqueFd, always close-on-exec; the view's mkdir -p).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>

#include "base/result.h"
#include "base/sys.h"
#include "base/unique_fd.h"

namespace moat::sandbox::sys {

// Sandbox code names every raw wrapper sys::, and inside moat::sandbox that means this
// namespace: the generic ones (pipes, sockets, opens, read/write loops) moved to base/sys.h
// so that every folder shares them, and are reached from here by this directive.
using namespace ::moat::sys;  // NOLINT(google-build-using-namespace)

// A detached copy of the mount tree at path (open_tree OPEN_TREE_CLONE), recursive when asked.
Result<UniqueFd> clone_tree(const std::string& path, bool recursive);
Result<UniqueFd> clone_tree_at(int dirfd, const std::string& rel, bool recursive);
Result<UniqueFd> landlock_create_ruleset(const void* attr, std::size_t size);
// mkdir -p: path and its missing parents, each made with mode; an existing path is success.
// One mkdir when the parent exists: only an ENOENT walks up (a view's parents mostly exist,
// and a walk from / was ~60 mkdir calls per session init, mostly EEXIST).
Result<void> make_dirs(const std::string& path, mode_t mode);

}  // namespace moat::sandbox::sys
