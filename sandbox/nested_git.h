// sandbox/nested_git.h: the `.git` entries a session creates below the workspace root, and the
// protected names it creates where the host had none, found and removed from the host side. A nested repository's config (core.fsmonitor, aliases,
// hooks) runs commands at the person's next git command inside it, outside any sandbox; no
// kernel interface refuses a name at any depth, so moatd removes what a call left when it ends.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"

namespace moat::sandbox {

struct RemovedGit {
  std::string path;   // workspace-relative: "docs/.git"
  const char* type;   // "directory", "file", "symlink", "other"
  std::string error;  // empty when removed; else why it is still there
  bool protected_name = false;  // one of the watched names (sweep_created), not a nested .git
};

// The `.git` entries below one workspace that existed when the session started. Thread-safe:
// sweeps run one at a time.
class NestedGitWatch {
 public:
  // Lists every `.git` entry below `workspace_fd` (duplicated and kept) other than the root's
  // own, by identity (device, inode, birth time): one moved elsewhere in the workspace is
  // still the person's. Errors: the errno of duplicating the fd.
  // Also notes which of `watched` (workspace-relative protected names, no glob: ".env",
  // ".git/hooks", ".moat", "~/.zshrc" when the workspace holds the home) are missing now:
  // sweep_created() removes those should they appear.
  static Result<NestedGitWatch> take(int workspace_fd, const std::vector<std::string>& watched = {});

  // Finds every `.git` entry not in the starting list and removes it: a file or symlink is
  // unlinked (a symlink's target is never touched), a directory emptied and removed, all by
  // fds beneath the workspace fd with O_NOFOLLOW at every step, never crossing a mount. The
  // walk does not enter any `.git` (the root's, a kept one's, a removed one's). Returns what
  // it found, each removed or with the reason it could not be.
  std::vector<RemovedGit> sweep();

  // Removes each watched name that was missing at take() and exists now, as sweep() removes a
  // `.git`: the session's masks cover only protected paths that exist (a mask of a missing one
  // would show the code an empty directory the host does not have), so what the code creates
  // under such a name does not outlive its call. The parent is reached beneath the workspace
  // with no symlink followed; a name whose parent is a symlink or gone is left alone.
  std::vector<RemovedGit> sweep_created();

  NestedGitWatch(NestedGitWatch&& o) noexcept
      : fd_(std::move(o.fd_)), known_(std::move(o.known_)), absent_(std::move(o.absent_)) {}

 private:
  using Key = std::tuple<dev_t, ino_t, std::int64_t>;
  explicit NestedGitWatch(UniqueFd fd) : fd_(std::move(fd)) {}

  UniqueFd fd_;
  std::set<Key> known_;
  std::vector<std::string> absent_;  // watched names missing at take()
  std::mutex mu_;
};

}  // namespace moat::sandbox
