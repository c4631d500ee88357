// sandbox/exec_stdio.h: which file descriptors a client may hand moatd as a command's stdin,
// stdout and stderr (an `exec` frame, docs/protocol.md), checked before anything holds them.
#pragma once

#include <array>

#include "base/result.h"
#include "base/unique_fd.h"

namespace moat::sandbox {

// What the checked fds are: whether one of them is a pseudo-terminal's slave, which the
// worker then takes as its controlling tty.
struct ExecStdio {
  bool terminal = false;
};

// Accepts exactly the kinds a shell or a service manager hands a command: pipes (FIFOs),
// regular files, a unix stream or seqpacket socket connected to its peer (systemd's
// StandardOutput=journal, a socketpair), a pseudo-terminal's slave (/dev/pts/N, which moat's
// client opens for a terminal) and the harmless memory devices (/dev/null, zero, full,
// random, urandom). Refused, naming the fd and what would be accepted: any other socket (a
// listening, datagram, unconnected or non-unix one would reach past the sandbox's network
// namespace), directories, block devices, O_PATH fds, any other character device (a
// console, /dev/mem, a host terminal that is not a fresh pty).
Result<ExecStdio> check_exec_stdio(const std::array<UniqueFd, 3>& fds);

}  // namespace moat::sandbox
