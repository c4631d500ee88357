// sandbox/session_idmap.h: the trees a session binds, as moatd prepares them before the
// keeper exists: the workspace and each bind's source, idmapped to the sandbox's ids when
// moatd is root.
#pragma once

#include <sys/types.h>

#include <optional>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"
#include "sandbox/ns_user.h"
#include "sandbox/session_config.h"
#include "sandbox/session_description.h"

namespace moat::sandbox {

// Whose files appear as the sandbox's root in an idmapped tree: the workspace's owner.
struct IdOwner {
  uid_t uid = 0;
  gid_t gid = 0;
  bool operator==(const IdOwner&) const = default;
};

// The owner of `config`'s workspace (its fd, else its path); nullopt when it cannot be read.
std::optional<IdOwner> workspace_owner(const SessionConfig& config);

// The user namespace a session's idmapped trees are made with (MOUNT_ATTR_IDMAP): one mapping,
// `owner`'s ids to the sandbox's. Only a mapping: the helper that made it has exited, so no
// process lives in it, and only moatd holds the fd. One per session, for its workspace and its
// binds; a pooled session's is made ahead with it (session_prebuilt.h), used only when the
// hello's workspace has that owner.
struct IdmapUserns {
  IdOwner owner;
  UniqueFd fd;  // invalid: not made yet
};
// Forks the helper (ns_user.h make_userns_fd): about 1 ms from a multi-threaded moatd.
Result<IdmapUserns> make_idmap_userns(const IdOwner& owner, const SandboxIds& ids);

// The workspace tree the session binds: idmapped to the sandbox's ids when moatd is root (an
// invalid fd when rootless: the keeper clones the workspace itself), with `userns` when it was
// made for the workspace's owner, else with one made here (left in `userns` for the binds). A
// failure is refused unless the policy allows running without "idmap", which `skipped` then
// records.
Result<UniqueFd> session_tree(int workspace, const SandboxIds& ids, const SessionConfig& config,
                              SkippedLayers& skipped, IdmapUserns& userns);

// What the keeper gets for each bind (SessionBind::fd, set here): when moatd is root, a
// detached tree cloned from the checked fd, idmapped as the workspace is (plainly cloned when
// the policy lets the session run without idmap and it failed); rootless, a copy of the checked
// fd, which the init compares with what the path names in its own namespace (ns_mount.h,
// BindPlan). `checked` gets a copy of each checked fd first: the session removes placeholders
// in them.
// `userns` is session_tree's, when idmapped.
Result<std::vector<UniqueFd>> bind_sources(const IdmapUserns& userns, const SandboxIds& ids,
                                           SessionConfig& config, bool idmapped,
                                           std::vector<UniqueFd>* checked);

}  // namespace moat::sandbox
