// sandbox/session_idmap.h: the trees a session binds, as moatd prepares them before the
// keeper exists: the workspace and each bind's source, idmapped to the sandbox's ids when
// moatd is root.
#pragma once

#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"
#include "sandbox/ns_user.h"
#include "sandbox/session_config.h"
#include "sandbox/session_description.h"

namespace moat::sandbox {

// The workspace tree the session binds: idmapped to the sandbox's ids when moatd is root (an
// invalid fd when rootless: the keeper clones the workspace itself). A failure is refused
// unless the policy allows running without "idmap", which `skipped` then records.
Result<UniqueFd> session_tree(int workspace, const SandboxIds& ids, const SessionConfig& config,
                              SkippedLayers& skipped);

// What the keeper gets for each bind (SessionBind::fd, set here): when moatd is root, a
// detached tree cloned from the checked fd, idmapped as the workspace is (plainly cloned when
// the policy lets the session run without idmap and it failed); rootless, a copy of the checked
// fd, which the init compares with what the path names in its own namespace (ns_mount.h,
// BindPlan). `checked` gets a copy of each checked fd first: the session removes placeholders
// in them.
Result<std::vector<UniqueFd>> bind_sources(int workspace, const SandboxIds& ids,
                                           SessionConfig& config, bool idmapped,
                                           std::vector<UniqueFd>* checked);

}  // namespace moat::sandbox
