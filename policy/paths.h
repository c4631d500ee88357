// policy/paths.h: canonical paths for matching: joined to a cwd, ~ expanded, "." "..", "//"
// collapsed, symlinks of the existing part resolved.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace moat::policy {

// Purely lexical: `path` joined to `cwd` when relative, then "." "..", "//" collapsed.
std::string lexical_absolute(std::string_view path, std::string_view cwd);

// lexical_absolute, then the longest existing prefix is realpath'd (a new file is judged
// by where its parent really is). Paths under /dev and /proc are left lexical: their
// symlinks (/dev/stdout -> /proc/self/fd/1) point at per-process objects.
std::string canonical_path(std::string_view path, std::string_view cwd);

// The workspace as the policy roots its rules and keys its project pins: canonical_workspace
// (base/workspace_path.h), the name moat gives it and moatd opens, when it names a directory;
// else canonical_path(workspace, "/") (a policy explained for a directory not there yet).
std::string workspace_root(const std::string& workspace);

// canonical_path for the many paths of one decision (its cwd, redirection targets, write
// operands, script paths), with the same results. realpath(3) reads every component of
// every path again; this remembers which prefixes it already found to exist and hold no
// symlink, and walks only the components below them. One per decision, never shared
// between decisions: a symlink swapped in between two decisions must be seen by the second.
class PathCache {
 public:
  // `root`, if given, is a canonical directory whose own path cannot change during the
  // session (the workspace: moatd binds it into the sandbox at session start, so what the
  // sandbox sees there stays that directory); its components are not walked again.
  explicit PathCache(const std::string* root = nullptr) : root_(root) {}
  std::string canonical(std::string_view path, std::string_view cwd);

 private:
  const std::string* root_;
  std::vector<std::string> plain_;  // existing entries whose path holds no symlink
};

// True if `path` is `root` or below it (both canonical).
bool is_under(std::string_view path, std::string_view root);

std::string_view base_name(std::string_view path);

}  // namespace moat::policy
