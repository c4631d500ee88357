// sandbox/socket_owner.h: which process of a session holds the other end of a connection the
// network proxy accepted on the session's loopback. TCP has no SO_PEERCRED, and the kernel's
// socket table (/proc/<pid>/net/tcp) walks every TCP socket of the host on each read (about
// 1 ms here); so the candidates' socket fds are looked at one by one (pidfd_getfd, then
// getsockname and getpeername: the connection's two addresses, swapped).
#pragma once

#include <sys/types.h>

#include <vector>

#include "base/result.h"

namespace moat::sandbox {

// The host pid of a process that has the peer of `accepted` open. `accepted` is a TCP socket
// accepted on a loopback; its peer is looked for among `candidates` first, then among every
// process in their pid namespace (or that of `ns_pid`, the session's init, when no candidate
// can be inspected). An error says why none was found (the program closed its end first).
Result<pid_t> socket_peer_pid(int accepted, pid_t ns_pid, const std::vector<pid_t>& candidates);

}  // namespace moat::sandbox
