// sandbox/socket_owner.cc: the process behind a proxied connection (see socket_owner.h).
#include "sandbox/socket_owner.h"

#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

#include "base/sys.h"

namespace moat::sandbox {
namespace {

// An address and port in one form: IPv4 as IPv4-mapped IPv6 (a client's IPv6 socket reaches
// an IPv4 listener as ::ffff:a.b.c.d).
struct Endpoint {
  std::array<unsigned char, 16> addr{};
  unsigned port = 0;
  bool operator==(const Endpoint&) const = default;
};

std::optional<Endpoint> endpoint(const sockaddr_storage& ss) {
  Endpoint e;
  if (ss.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&ss);
    e.addr[10] = e.addr[11] = 0xff;
    std::memcpy(e.addr.data() + 12, &a->sin_addr, 4);
    e.port = ntohs(a->sin_port);
    return e;
  }
  if (ss.ss_family != AF_INET6) return std::nullopt;
  const auto* a = reinterpret_cast<const sockaddr_in6*>(&ss);
  std::memcpy(e.addr.data(), &a->sin6_addr, 16);
  e.port = ntohs(a->sin6_port);
  return e;
}

// The local and remote ends of socket `fd`.
std::optional<std::pair<Endpoint, Endpoint>> ends_of(int fd) {
  sockaddr_storage local{}, remote{};
  socklen_t llen = sizeof local, rlen = sizeof remote;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &llen) != 0 ||
      getpeername(fd, reinterpret_cast<sockaddr*>(&remote), &rlen) != 0)
    return std::nullopt;
  auto l = endpoint(local), r = endpoint(remote);
  if (!l || !r) return std::nullopt;
  return std::make_pair(*l, *r);
}

// Whether process `pid` has a socket open whose ends are `ends`. Only fds that are sockets
// are copied (pidfd_getfd), and a copy is only asked for its addresses: moatd never reads or
// writes the program's sockets.
bool holds(pid_t pid, const std::pair<Endpoint, Endpoint>& ends) {
  auto pidfd = sys::pidfd_open(pid);
  if (!pidfd) return false;
  const std::string dir = "/proc/" + std::to_string(pid) + "/fd";
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return false;
  bool found = false;
  char target[64];
  while (const dirent* e = readdir(d)) {
    const ssize_t n = readlinkat(dirfd(d), e->d_name, target, sizeof target - 1);
    if (n <= 0 || std::strncmp(target, "socket:[", 8) != 0) continue;
    auto copy = sys::pidfd_getfd(pidfd->get(), std::atoi(e->d_name));
    struct stat st {};
    if (!copy || fstat(copy->get(), &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    if (ends_of(copy->get()) == ends) {
      found = true;
      break;
    }
  }
  closedir(d);
  return found;
}

std::string ns_link(pid_t pid) {
  char target[64];
  const ssize_t n =
      readlink(("/proc/" + std::to_string(pid) + "/ns/pid").c_str(), target, sizeof target - 1);
  return n <= 0 ? "" : std::string(target, static_cast<std::size_t>(n));
}

// The first process in the candidates' pid namespace that holds the socket. The namespace is
// read from a candidate when it can be: a non-root moatd may not inspect the session's init
// (it is not dumpable), only the programs it runs.
pid_t scan_namespace(pid_t ns_pid, const std::vector<pid_t>& candidates,
                     const std::pair<Endpoint, Endpoint>& ends) {
  std::string ns;
  for (pid_t pid : candidates)
    if (ns.empty()) ns = ns_link(pid);
  if (ns.empty()) ns = ns_link(ns_pid);
  if (ns.empty()) return -1;
  DIR* d = opendir("/proc");
  if (d == nullptr) return -1;
  pid_t found = -1;
  while (const dirent* e = readdir(d)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (pid <= 0 || *end != '\0') continue;
    if (ns_link(static_cast<pid_t>(pid)) == ns && holds(static_cast<pid_t>(pid), ends)) {
      found = static_cast<pid_t>(pid);
      break;
    }
  }
  closedir(d);
  return found;
}

}  // namespace

Result<pid_t> socket_peer_pid(int accepted, pid_t ns_pid, const std::vector<pid_t>& candidates) {
  auto ends = ends_of(accepted);
  if (!ends) return fail(Error::from_errno("getpeername", errno, "proxy connection"));
  // The program's socket has the same two ends, the other way round.
  const std::pair<Endpoint, Endpoint> peer{ends->second, ends->first};
  for (pid_t pid : candidates)
    if (holds(pid, peer)) return pid;
  if (pid_t pid = scan_namespace(ns_pid, candidates, peer); pid > 0) return pid;
  return fail("no process of the session holds its socket (the program closed it)");
}

}  // namespace moat::sandbox
