// sandbox/workspace_index.h: which workspace files a tool call created, modified, deleted or
// renamed, whatever changed them (a file tool, or any process under bash): a stat index of the
// workspace in the style of git's index (path -> device, inode, size, mtime, ctime, mode,
// SHA-256), diffed after each call against a fresh stat walk that re-hashes only the files
// whose stat changed. docs/sessions.md says what it costs and what it cannot see.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"

namespace moat::sandbox {

// One side of a change: what a path held. A symlink's content is its target, never what it
// points to.
struct FileVersion {
  std::string sha256;              // lowercase hex; "" when not hashed (unhashed says why)
  std::uint64_t size = 0;          // st_size: bytes, or a symlink's target length
  mode_t mode = 0;                 // S_IFREG or S_IFLNK, and the permission bits
  const char* unhashed = nullptr;  // "larger than the hash cap", "unreadable"
};

enum class FileOp { kCreate, kModify, kDelete, kRename };
const char* file_op_name(FileOp op);  // "create", "modify", "delete", "rename"

struct FileChange {
  FileOp op;
  std::string path;                   // workspace-relative; for a rename, the new name
  std::string from;                   // a rename's old name; empty otherwise
  std::optional<FileVersion> before;  // none for a create
  std::optional<FileVersion> after;   // none for a delete
};

struct FileChanges {
  std::vector<FileChange> changes;  // by path, at most IndexLimits::max_changes
  bool truncated = false;           // more changed than max_changes
};

struct IndexLimits {
  // A larger regular file is tracked by its stat alone: any stat change is a modify.
  std::uint64_t max_hash_bytes = 64u << 20;
  std::size_t max_changes = 1000;  // per diff
  // Past this many entries the index gives up (E2BIG): a diff would cost more than the call.
  std::size_t max_entries = 200000;
  // Workspace-relative paths left out with everything beneath them (moat's own files, which
  // moatd itself changes during a call). Entries named ".git" are always left out: git's
  // objects and index churn on every commit, and its hooks and config are read-only in the
  // sandbox anyway.
  std::vector<std::string> skip;
};

// The index of one workspace. Thread-safe: diffs run one at a time, so a change made while two
// calls run is reported by the first diff that sees it.
class WorkspaceIndex {
 public:
  struct Entry {
    dev_t dev = 0;
    ino_t ino = 0;
    std::int64_t mtime_ns = 0, ctime_ns = 0;
    bool racy = false;       // changed too close to its stat for the timestamps to tell: re-hash
    std::uint64_t seen = 0;  // the last walk that found it
    FileVersion version;
  };

  // Walks `workspace_fd` (an O_PATH or O_RDONLY directory; duplicated and kept) without
  // following any symlink, and hashes every regular file up to the cap. A file whose stat an
  // ended index of the same workspace (device, inode, birth time) holds unchanged, and not
  // racy, keeps that index's hash instead of being read again: the process keeps the entries
  // of the last ended indexes (at most kKeptEntries in all, the oldest dropped first), so a
  // resident moatd's next session in a repository re-reads only what changed (issue 30). The
  // trust is the one a diff gives an unchanged stat between two calls. Errors: E2BIG past
  // max_entries; the errno of the workspace's own open otherwise (unreadable subdirectories
  // are left out, not fatal).
  static Result<std::unique_ptr<WorkspaceIndex>> build(int workspace_fd, IndexLimits limits = {});
  // Gives the entries to the process's kept indexes (unless a walk failed).
  ~WorkspaceIndex();
  WorkspaceIndex(const WorkspaceIndex&) = delete;
  WorkspaceIndex& operator=(const WorkspaceIndex&) = delete;

  // The entries kept for later builds, all workspaces together: ~200 bytes each, 40 MB at most.
  static constexpr std::size_t kKeptEntries = 200000;

  // Walks again, re-hashing what is new or whose stat changed (or was racy), and returns what
  // changed since the last build or diff; the index then holds the new state. A create and a
  // delete with the same content (the same inode preferred, else the same non-empty SHA-256)
  // are one rename. A change of mode alone is a modify with equal hashes; a touch (times
  // alone) is no change.
  Result<FileChanges> diff();

  std::size_t size() const;

 private:
  using Map = std::unordered_map<std::string, Entry>;
  // A workspace as the kept indexes know it: device, inode, birth time (ns; 0 when the file
  // system has none), and the hash cap its hashes were taken under.
  using Key = std::tuple<dev_t, ino_t, std::int64_t, std::uint64_t>;
  WorkspaceIndex(UniqueFd fd, IndexLimits limits)
      : fd_(std::move(fd)), limits_(std::move(limits)) {}
  // The walk behind build and diff: updates entries_ and returns what changed.
  Result<std::vector<FileChange>> walk();

  UniqueFd fd_;
  IndexLimits limits_;
  mutable std::mutex mu_;
  Map entries_;
  std::uint64_t generation_ = 0;  // the walk that last saw each entry is in its `seen`
  std::optional<Error> broken_;
  std::optional<Key> key_;  // none: the workspace's identity was not read, nothing is kept
};

}  // namespace moat::sandbox
