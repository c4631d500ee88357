// sandbox/ns_net.h: the session's network namespace: loopback only.
#pragma once

#include "base/result.h"
#include "base/unique_fd.h"

namespace moat::sandbox {

// Brings up "lo" in the caller's (new) network namespace; everything else stays absent, so
// without a proxy nothing outside the session is reachable.
Result<void> bring_up_loopback();

// A listening TCP socket on 127.0.0.1:port of the caller's network namespace. moatd accepts
// on it from outside (sandbox/net_proxy.h): a socket stays in the namespace it was made in.
Result<UniqueFd> listen_on_loopback(int port);

}  // namespace moat::sandbox
