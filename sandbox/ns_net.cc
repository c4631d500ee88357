// sandbox/ns_net.cc: loopback in the session's network namespace (see ns_net.h).
#include "sandbox/ns_net.h"

#include <net/if.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

#include "base/sys.h"
#include "base/unique_fd.h"

namespace moat::sandbox {

Result<void> bring_up_loopback() {
  MOAT_ASSIGN_OR_RETURN(UniqueFd sock, sys::make_socket(AF_INET, SOCK_DGRAM));
  ifreq req{};
  std::strncpy(req.ifr_name, "lo", IFNAMSIZ - 1);
  if (ioctl(sock.get(), SIOCGIFFLAGS, &req) != 0)
    return fail(Error::from_errno("SIOCGIFFLAGS", errno, "lo"));
  req.ifr_flags = static_cast<short>(req.ifr_flags | IFF_UP | IFF_RUNNING);
  if (ioctl(sock.get(), SIOCSIFFLAGS, &req) != 0)
    return fail(Error::from_errno("SIOCSIFFLAGS", errno, "lo"));
  return {};
}

Result<UniqueFd> listen_on_loopback(int port) {
  MOAT_ASSIGN_OR_RETURN(UniqueFd sock, sys::make_socket(AF_INET, SOCK_STREAM));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(sock.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
    return fail(Error::from_errno("bind", errno, "127.0.0.1:" + std::to_string(port)));
  if (listen(sock.get(), SOMAXCONN) != 0) return fail(Error::from_errno("listen", errno));
  return sock;
}

}  // namespace moat::sandbox
