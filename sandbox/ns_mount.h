// sandbox/ns_mount.h: the session's filesystem view: a fresh tmpfs root with read-only system
// directories, the workspace read-write at its own path, private /tmp, new /proc, minimal /dev.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"

namespace moat::sandbox {

// System directories bound read-only when the policy names none. Never /root or /home:
// the host's secrets live there.
const std::vector<std::string>& default_read_only_paths();

// A bind of the session (SessionBind) as the init mounts it.
struct BindPlan {
  std::string source;  // host path (rootless: opened again here, see `tree`)
  std::string target;  // sandbox path
  bool writable = false;
  bool is_dir = false;
  // A detached tree moatd cloned from the checked fd (moatd as root); else (false) `fd` is the
  // checked fd itself, and the source path is opened again, with no symlink followed, and
  // bound only if it is still that same file (device and inode).
  bool tree = false;
  int fd = -1;
};

struct MountPlan {
  std::string workspace;               // the sandbox path the workspace tree is attached at
  std::vector<std::string> read_only;  // host paths, bound read-only (missing ones skipped)
  std::uint64_t tmp_size = 256ull << 20;
  std::string hostname = "moat";
  // The workspace: a detached tree cloned from the fd moatd opened and checked (idmapped by
  // moatd as root, cloned by the keeper otherwise; see session_idmap.cc and session_keeper.cc).
  // Never cloned by path.
  int workspace_tree = -1;
  std::vector<BindPlan> binds;  // mounted after what they may lie under (by depth)
};

// Runs in the session init: pid 1 of the new pid namespace (so the new /proc shows only
// the session), inside the new mount and user namespaces. Builds the view under a staging
// tmpfs, pivot_roots into it and detaches the old root. Errors name the mount step.
Result<void> build_view_in_init(const MountPlan& plan);

// The same view in two steps, for a pooled session's init made before its hello (moatd as
// root): stage_view_in_init builds all that does not depend on the workspace (read-only system
// paths, /tmp, /dev, /proc, /run, the hostname) under the staging tmpfs, from `plan`'s
// read_only, tmp_size and hostname; finish_view_in_init then attaches the workspace and binds,
// which must be moatd's detached trees (the stage covers host paths), and pivot_roots.
Result<void> stage_view_in_init(const MountPlan& plan);
Result<void> finish_view_in_init(const MountPlan& plan);
// Whether a view staged with `read_only` (empty: default_read_only_paths) can be finished with
// a workspace and binds at `targets`: none of them is at or above a staged path (a read-only
// path inside the workspace, or a workspace holding /tmp, is mounted in another order).
bool fits_staged_view(const std::vector<std::string>& read_only,
                      const std::vector<std::string>& targets);
// The host's read-only paths (empty: default_read_only_paths) as a view binds them now: each
// one's type, device and inode (lstat), a symlink's target, or its absence. A view staged ahead
// shows the host as it is at a hello only while this is what it was before the staging: a path
// the host moved away, replaced, mounted over or created since is not what the view binds.
std::string read_only_paths_stamp(const std::vector<std::string>& read_only);
// The same for mounts under those paths: an fd of moatd's /proc/self/mountinfo, opened before
// the staging, polls POLLPRI once any mount of moatd's namespace was made, moved or removed
// since (proc(5)); mount_table_changed says so, and true when it cannot tell (fd -1).
Result<UniqueFd> watch_mount_table();
bool mount_table_changed(int watch);

}  // namespace moat::sandbox
