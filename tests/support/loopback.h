// tests/support/loopback.h: TCP sockets on the host's 127.0.0.1 for tests and benches of the
// network proxy (header only: a listener on a free port, and a connection to a port).
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>

#include "base/unique_fd.h"

namespace moat::testing {

inline sockaddr_in loopback_address(int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return a;
}

// A listener on 127.0.0.1 at a port the kernel picks (*port); invalid on failure.
inline UniqueFd listen_on_free_port(int* port) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in a = loopback_address(0);
  socklen_t len = sizeof a;
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&a), len) != 0 || ::listen(fd.get(), 64) != 0)
    return UniqueFd();
  getsockname(fd.get(), reinterpret_cast<sockaddr*>(&a), &len);
  *port = ntohs(a.sin_port);
  return fd;
}

// A connection to 127.0.0.1:port; invalid on failure.
inline UniqueFd connect_to_port(int port) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  const sockaddr_in a = loopback_address(port);
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0) return UniqueFd();
  return fd;
}

}  // namespace moat::testing
