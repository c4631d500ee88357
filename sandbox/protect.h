// sandbox/protect.h: protected workspace paths (.git/hooks, .git/config, .moat, policy-denied
// globs), masked read-only in the session's view and re-derived before every call.
#pragma once

#include <string>
#include <vector>

#include "base/result.h"

namespace moat::sandbox {

// The sandbox path to cover for one workspace-relative protected path:
//  - the path itself when it exists;
//  - the first symlink on the way (the link itself, never what it points to);
//  - the first missing component (so the code cannot create it).
// Never leaves the workspace: ".." components are refused (EINVAL).
Result<std::string> mask_target(const std::string& workspace, const std::string& relative);

// Runs in the session init before every fork. Each target that is not already a mount point
// gets a read-only bind of itself; a missing target is first created as an empty directory
// (a mount needs a mount point; a directory blocks both a file and a directory of that name);
// a symlink is covered by an empty read-only file. Glob patterns (*, ?, [) are matched
// against the workspace's current entries (** crosses directories). Every directory between
// the workspace and a target is made a mount point too, so it cannot be renamed or removed
// (EBUSY): masks cannot be carried away with a renamed parent.
Result<void> mask_protected_paths(const std::string& workspace,
                                  const std::vector<std::string>& patterns);

// Runs in the session init before every fork, before mask_protected_paths: each existing
// match is covered by an empty read-only directory (for a directory) or file (otherwise, a
// symlink included), so its content cannot be read. Patterns as in mask_protected_paths.
Result<void> hide_paths(const std::string& workspace, const std::vector<std::string>& patterns);

}  // namespace moat::sandbox
