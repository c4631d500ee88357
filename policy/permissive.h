// policy/permissive.h: `moat sandbox exec --permissive` (a private moatd's --permissive): every
// tool, command line and program is allowed, except what the organisation's system layer or a
// --policy file decided (their denies and asks hold); every other judgement is the wrapped
// policy's: paths, protected and hidden globs, resources, the audit log. The sandbox's layers are
// unchanged.
#pragma once

#include <memory>

#include "policy/policy.h"

namespace moat::policy {

// The session mode a permissive session runs in, which the organisation's allowed_modes may
// leave out.
inline constexpr const char* kPermissiveMode = "permissive";

std::unique_ptr<Policy> make_permissive(std::unique_ptr<Policy> inner);

}  // namespace moat::policy
