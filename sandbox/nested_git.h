// sandbox/nested_git.h: the `.git` entries a session creates below the workspace root, found
// and removed from the host side. A nested repository's config (core.fsmonitor, aliases,
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
};

// The `.git` entries below one workspace that existed when the session started. Thread-safe:
// sweeps run one at a time.
class NestedGitWatch {
 public:
  // Lists every `.git` entry below `workspace_fd` (duplicated and kept) other than the root's
  // own, by identity (device, inode, birth time): one moved elsewhere in the workspace is
  // still the person's. Errors: the errno of duplicating the fd.
  static Result<NestedGitWatch> take(int workspace_fd);

  // Finds every `.git` entry not in the starting list and removes it: a file or symlink is
  // unlinked (a symlink's target is never touched), a directory emptied and removed, all by
  // fds beneath the workspace fd with O_NOFOLLOW at every step, never crossing a mount. The
  // walk does not enter any `.git` (the root's, a kept one's, a removed one's). Returns what
  // it found, each removed or with the reason it could not be.
  std::vector<RemovedGit> sweep();

  NestedGitWatch(NestedGitWatch&& o) noexcept
      : fd_(std::move(o.fd_)), known_(std::move(o.known_)) {}

 private:
  using Key = std::tuple<dev_t, ino_t, std::int64_t>;
  explicit NestedGitWatch(UniqueFd fd) : fd_(std::move(fd)) {}

  UniqueFd fd_;
  std::set<Key> known_;
  std::mutex mu_;
};

}  // namespace moat::sandbox
