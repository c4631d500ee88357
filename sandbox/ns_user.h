// sandbox/ns_user.h: the session's user namespace: who the sandbox's uid 0 is on the host,
// and the id maps moatd writes for it (and for the idmapped workspace mount).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "base/result.h"
#include "base/unique_fd.h"

namespace moat::sandbox {

// One line of uid_map/gid_map: `inside outside 1`. The sandbox only ever maps one id.
struct IdMap {
  std::uint32_t inside = 0;
  std::uint32_t outside = 0;
  std::string line() const;  // "0 65534 1\n"
};

// The host ids the sandbox's uid/gid 0 map to. Rootless moatd maps its own ids (the only
// mapping an unprivileged process may write); root moatd maps the configured unprivileged
// ids, never host root, so DAC, setuid files and RLIMIT_NPROC behave as for a plain user.
struct SandboxIds {
  IdMap uid;
  IdMap gid;
  bool rootless = false;
};
SandboxIds choose_sandbox_ids(uid_t unprivileged_uid, gid_t unprivileged_gid);

// Writes uid_map, setgroups=deny and gid_map of pid's user namespace (run in moatd, the
// parent, which holds the privilege over the parent namespace that the child lacks).
// setgroups is denied first because an unprivileged writer may not map gids otherwise, and
// because a sandbox that could drop groups could read files denied to a group (CVE-2014-8989).
Result<void> write_id_maps_in_parent(pid_t pid, const IdMap& uid, const IdMap& gid);

// A user namespace holding the given single mapping, as an fd, for MOUNT_ATTR_IDMAP.
// Forks a short-lived child that unshares and waits while the maps are written.
Result<UniqueFd> make_userns_fd(const IdMap& uid, const IdMap& gid);

// Root moatd: the keeper creates the session's user namespace as the unprivileged ids (and
// with them as its only groups), not as root. What the sandbox creates under a per-user
// counter (inotify instances and watches, pending signals, message queue bytes: ucounts,
// user_namespaces(7)) is charged to the namespace's owner on the host as well, so it falls on
// that uid, never on root (except where the kernel refuses or strips user namespaces made by
// a non-root uid: Debian's unprivileged_userns_clone = 0, Ubuntu's AppArmor restriction; there
// the keeper stays root). Rootless moatd: nothing to do (the owner is the user). Runs in the
// forked keeper before unshare(CLONE_NEWUSER); returns 0 or an errno.
int become_namespace_owner_in_child(uid_t uid, gid_t gid);

// Lowers the per-user counters of the caller's user namespace (/proc/sys/user/max_*, which
// are per namespace and checked at every level up to the host's): no new namespaces and no
// fanotify (seccomp refuses them too), and a quarter of the host's inotify instances
// and watches, so one session cannot take all of its owner's. Runs in the keeper as uid 0 of
// the new namespace (CAP_SYS_RESOURCE there), after the session's own namespaces exist.
// Returns 0 or an errno, with *failed naming the file.
int lower_user_counters_in_child(const char** failed);

// What lower_user_counters_in_child writes: a fixed value, or a share of the host's limit.
struct UserCounter {
  const char* name;       // file in /proc/sys/user
  long value;             // written as is when host_file is nullptr
  const char* host_file;  // else a quarter of the host's limit read here
};
inline constexpr UserCounter kUserCounters[] = {
    {"max_user_namespaces", 0, nullptr},
    {"max_pid_namespaces", 0, nullptr},
    {"max_net_namespaces", 0, nullptr},
    {"max_ipc_namespaces", 0, nullptr},
    {"max_uts_namespaces", 0, nullptr},
    {"max_cgroup_namespaces", 0, nullptr},
    {"max_time_namespaces", 0, nullptr},
    {"max_fanotify_groups", 0, nullptr},
    {"max_fanotify_marks", 0, nullptr},
    // open_tree(OPEN_TREE_CLONE) makes an anonymous mount namespace, counted here (ENOSPC at
    // 0): the init clones one tree at a time to mask protected paths before every call.
    {"max_mnt_namespaces", 64, nullptr},
    {"max_inotify_instances", 0, "/proc/sys/fs/inotify/max_user_instances"},
    {"max_inotify_watches", 0, "/proc/sys/fs/inotify/max_user_watches"},
};

}  // namespace moat::sandbox
