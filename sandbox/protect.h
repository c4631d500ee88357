// sandbox/protect.h: protected workspace paths (.git/hooks, .git/config, .moat, policy-denied
// globs), masked read-only in the session's view and re-derived before every call.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <span>
#include <ctime>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/result.h"

namespace moat::sandbox {

// A workspace path that a tool on the host runs code from (git, direnv, editors), as a glob
// for mask_protected_paths, with the reason. moatd protects every one of them in every
// session; docs/security.md lists them beside the ones left out and why.
struct HostExecutedPath {
  const char* pattern;
  const char* why;
};
std::span<const HostExecutedPath> host_executed_paths();

// The row of host_executed_paths() that a workspace-relative path is, or lies below; null when
// none. For paths that a session or a patch changed (moat batch --apply, a session's end), not
// for masking: any `.git` component counts (the `**/.git` row), whether the .git is a directory
// or a file, since below it lie a repository's config and hooks.
const HostExecutedPath* host_executed_match(std::string_view relative);

// The default limit of the per-call walk that finds a workspace's glob matches.
inline constexpr std::size_t kMaxProtectWalkEntries = 500000;

// The sandbox path to cover for one workspace-relative protected path:
//  - the path itself when it exists;
//  - the first symlink on the way (the link itself, never what it points to);
//  - the first missing component (so the code cannot create it).
// Never leaves the workspace: ".." components are refused (EINVAL).
Result<std::string> mask_target(const std::string& workspace, const std::string& relative);

// A directory mask_protected_paths created to mask a missing path. The workspace is the host's
// directory, so it stays on the host's disk; the session removes it when it ends.
struct Placeholder {
  std::string relative;  // workspace-relative
  dev_t dev = 0;         // the directory created: a same-named one made later is not ours
  ino_t ino = 0;
};

// Runs in the session init before every fork. Each target that is not already a mount point
// gets a read-only bind of itself; with mask_missing, a missing target is first created as an
// empty directory (a mount needs a mount point; a directory blocks both a file and a directory
// of that name) and appended to *created; without it (SessionConfig::protected_if_present, whose
// created names moatd removes) a missing target is left alone; a symlink is covered by an empty read-only file. Glob patterns
// (*, ?, [) are matched against the workspace's current entries by the policy's engine
// (base/glob.h: a "**" component crosses directories, none included, so a leading "**/" also
// matches at the top; every other wildcard stays in its component). A glob whose last
// component is ".git" matches only a .git that is not a directory (a gitlink file or a symlink): a .git directory is never masked whole. Every directory between
// the workspace and a target is made a mount point too, so it cannot be renamed or removed (EBUSY):
// masks cannot be carried away with a renamed parent. A glob pattern's walk visits at most
// max_entries entries: past that the call is refused with E2BIG (fail closed) rather than run with
// later matches unmasked. A directory the walk cannot read is masked as a whole (its content cannot
// be checked). Kept by the session init between calls for mask_protected_paths' hard-link check:
// per directory, its inode and change times when it was last read, and which of its regular files
// had more than one name. A directory unchanged since (and not changed in the two seconds
// before it was read, which a coarse timestamp could hide) is not stat'ed file by file again:
// only those files are. So a link made on the host from outside to a workspace file that had
// one name, in a directory that did not change, is not seen.
struct LinkCache {
  struct Dir {
    ino_t ino = 0;
    timespec mtime{}, ctime{};
    bool settled = false;            // read two seconds or more after its last change
    std::vector<std::string> multi;  // names of its regular files with st_nlink > 1
  };
  std::unordered_map<std::string, Dir> dirs;  // workspace-relative, "" for the top
};

// With linked_files, the walk covers the whole workspace and every regular file with more
// names (st_nlink) than the walk found inside the workspace is bound read-only too: its other
// name may be outside (a pnpm store), and a write through the workspace's name would change
// that file. A directory holding nothing but such files is bound whole.
Result<void> mask_protected_paths(const std::string& workspace,
                                  const std::vector<std::string>& patterns,
                                  std::vector<Placeholder>* created,
                                  std::size_t max_entries = kMaxProtectWalkEntries,
                                  LinkCache* linked_files = nullptr, bool mask_missing = true);

// The protected names a session may not create where the workspace has none, for
// NestedGitWatch::take: each pattern of `patterns` that is no glob (".env", ".moat",
// ".git/hooks"), and the top-level form of each host_executed_paths() row inside .git
// ("**/.git/info" is ".git/info"), but for the gitlink row: the root's .git directory is the
// repository itself. A project's own host-executed files (.envrc, .vscode/tasks.json) are not
// watched: the agent may write them; the session's end names them (agent/host_files.h).
std::vector<std::string> creation_watched_names(const std::vector<std::string>& patterns);

// Host side, once no process of the session is left: removes each placeholder that is still
// the directory that was created (same device and inode) and still empty, deepest first,
// reached beneath the workspace without following symlinks. A placeholder that is gone, was
// replaced or holds something is left alone; the error is the first other failure.
// `workspace_fd` is the directory the session was built from (the path only names it in
// errors); the overload by path opens it first.
Result<void> remove_placeholders(int workspace_fd, const std::string& workspace,
                                 std::vector<Placeholder> placeholders);
Result<void> remove_placeholders(const std::string& workspace,
                                 std::vector<Placeholder> placeholders);

// Runs in the session init before every fork, before mask_protected_paths: each existing
// match is covered by an empty read-only directory (for a directory) or file (otherwise, a
// symlink included), so its content cannot be read. Patterns as in mask_protected_paths.
Result<void> hide_paths(const std::string& workspace, const std::vector<std::string>& patterns,
                        std::size_t max_entries = kMaxProtectWalkEntries);

// What Init::start_call masks in the workspace before every call: hide_paths' `hidden`, then
// mask_protected_paths' `protected_paths` (with linked_files) and `protected_if_present`
// (mask_missing false). Any may be null (none). One walk of the workspace finds the glob matches
// of all three, each list bounded by max_entries as its own walk was; they are applied in that
// order with the same results as the three calls (a hidden match is an empty mount to the other
// two, so they neither match nor enter it).
struct WorkspaceMasks {
  const std::vector<std::string>* hidden = nullptr;
  const std::vector<std::string>* protected_paths = nullptr;
  const std::vector<std::string>* protected_if_present = nullptr;
  std::size_t max_entries = kMaxProtectWalkEntries;
  LinkCache* linked_files = nullptr;
};
Result<void> protect_workspace(const std::string& workspace, const WorkspaceMasks& masks,
                               std::vector<Placeholder>* created);

}  // namespace moat::sandbox
