// sandbox/ns_net.h: the session's network namespace: loopback only.
#pragma once

#include "base/result.h"

namespace moat::sandbox {

// Brings up "lo" in the caller's (new) network namespace; everything else stays absent, so
// without a proxy nothing outside the session is reachable.
Result<void> bring_up_loopback();

}  // namespace moat::sandbox
