// sandbox/caps.h: dropping every capability of a worker for good.
#pragma once

namespace moat::sandbox {

// Locks the securebits (so exec as uid 0 grants nothing), clears the ambient set, empties the
// bounding set, then the inheritable, permitted and effective sets, and verifies that nothing
// remains. Returns 0 or an errno (EPERM when a capability survived). No heap: runs between
// fork and exec.
int drop_all_caps_in_child();

// True when the calling process holds no capability in any set (for tests and checks).
bool has_no_capabilities();

}  // namespace moat::sandbox
