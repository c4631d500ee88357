// sandbox/resident_peer.h: what a resident moatd (moatd --owner-only, --typed-exec with
// --socket) checks of a client: that it is its own user's, and whether it is the person's own
// CLI (its exec frames are what the person typed) or may be an agent loop (an agent's).
#pragma once

#include <sys/types.h>

#include <string_view>

#include "base/result.h"
#include "sandbox/listen_socket.h"
#include "sandbox/supervisor_options.h"

namespace moat::sandbox {

// What /proc/PID/status says of a process's confinement.
struct PeerConfinement {
  bool no_new_privs = true;  // "NoNewPrivs:"
  int seccomp = 2;           // "Seccomp:": 0 none, 1 strict, 2 filter
};

// Parses the NoNewPrivs and Seccomp lines of a /proc/PID/status text; fails naming the line
// that is missing, so a kernel that stops printing one is judged confined, not free.
Result<PeerConfinement> parse_confinement(std::string_view status);

// The agent loop sets no_new_privs and a seccomp filter before it speaks to a model
// (agent/unprivileged.cc) and can never clear them; the person's `moat sandbox exec` has
// neither. So a peer is the person's when it runs as `own_uid` (SO_PEERCRED) and the process
// that connected `sock` (SO_PEERPIDFD: it cannot name a reused pid) has neither, read from
// /proc/PID/status and confirmed to be that process by a signal-0 to the pidfd after the read.
// Any failure to tell answers false: the line is then judged as an agent's.
bool is_persons_peer(int sock, uid_t own_uid);

// The options one connection of a --socket moatd is served with: `options`, with typed_exec
// decided for this peer when options.typed_exec_by_peer. Fails, naming the peer's uid, when
// options.owner_only and the peer is another user (root included).
Result<SupervisorOptions> options_for_peer(const SupervisorOptions& options, int sock,
                                           const PeerCred& peer);

}  // namespace moat::sandbox
