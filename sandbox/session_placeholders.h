// sandbox/session_placeholders.h: the placeholder directories the session's init made for
// missing protected paths (init_contract.h, kPlaceholder), removed by moatd when the session
// ends where they are still empty.
#pragma once

#include <vector>

#include "base/unique_fd.h"
#include "sandbox/protect.h"
#include "sandbox/session_config.h"

namespace moat::sandbox {

// The placeholder records the init sent on the control socket since kReady, without blocking.
std::vector<Placeholder> drain_placeholders(int ctl);

// Removes each placeholder in the directory it was made in: the workspace's (`workspace`) by
// their relative path, a bind's by their sandbox path (session_init.cc, mask_binds) in the
// bind's checked source (bind_dirs[i] for config.binds[i]). A failure is logged.
void remove_session_placeholders(std::vector<Placeholder> created, int workspace,
                                 const SessionConfig& config,
                                 const std::vector<UniqueFd>& bind_dirs);

}  // namespace moat::sandbox
