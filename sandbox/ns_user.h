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

}  // namespace moat::sandbox
