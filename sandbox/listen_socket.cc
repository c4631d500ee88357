// sandbox/listen_socket.cc: claiming a Unix socket path (see listen_socket.h).
#include "sandbox/listen_socket.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <fcntl.h>

#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "base/sys.h"

namespace moat::sandbox {
namespace {

Result<sockaddr_un> address_of(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof addr.sun_path)
    return fail(Error{ENAMETOOLONG, "socket path is empty or too long: " + path});
  path.copy(addr.sun_path, path.size());
  return addr;
}

// Whether a process listens on the socket at `addr`. A non-blocking connect does not wait
// for a full backlog (EAGAIN): that too is a live listener. Only ECONNREFUSED (a socket file
// with no listener behind it) says the path is free to take.
Result<bool> has_listener(const sockaddr_un& addr, const std::string& path) {
  MOAT_ASSIGN_OR_RETURN(UniqueFd probe, sys::make_socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK));
  if (::connect(probe.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0)
    return true;
  if (errno == ECONNREFUSED) return false;
  if (errno == EAGAIN) return true;
  return fail(Error::from_errno("connect", errno, path));
}

// Makes the path free to bind: absent, or a stale socket file, which is removed.
Result<void> clear_stale(const sockaddr_un& addr, const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return {};
    return fail(Error::from_errno("lstat", errno, path));
  }
  if (!S_ISSOCK(st.st_mode))
    return fail(Error{EEXIST, path + " exists and is not a socket; refusing to replace it"});
  MOAT_ASSIGN_OR_RETURN(bool live, has_listener(addr, path));
  if (live)
    return fail(Error{EADDRINUSE, path + " is in use: another process (a running moatd?) "
                                         "accepts connections on it"});
  if (::unlink(path.c_str()) != 0 && errno != ENOENT)
    return fail(Error::from_errno("unlink", errno, path));
  return {};
}

// sd_listen_fds(3): the first passed fd is 3 (SD_LISTEN_FDS_START).
constexpr int kSystemdFirstFd = 3;

// A variable systemd sets, as a positive decimal number; an error naming it otherwise.
Result<long> listen_number(const char* name, const char* value) {
  char* end = nullptr;
  errno = 0;
  const long n = value == nullptr ? 0 : std::strtol(value, &end, 10);
  if (value == nullptr || *value == '\0' || *end != '\0' || errno != 0 || n <= 0)
    return fail(Error{EINVAL, std::string(name) + "=" + (value ? value : "(unset)") +
                                  " is not a positive decimal number (socket activation)"});
  return n;
}

// An int socket option of `fd`, or an error naming it.
Result<int> socket_option(int fd, int option, const char* name) {
  int value = 0;
  socklen_t len = sizeof value;
  if (::getsockopt(fd, SOL_SOCKET, option, &value, &len) != 0)
    return fail(Error::from_errno("getsockopt", errno, std::string("fd 3 from systemd, ") + name));
  return value;
}

// fd 3 is what moatd serves on only if it is a Unix stream socket that listens: anything else
// (a file, a datagram or TCP socket, a socket not yet listening) is a unit written wrong.
Result<void> check_activated_fd(int fd) {
  MOAT_ASSIGN_OR_RETURN(int domain, socket_option(fd, SO_DOMAIN, "SO_DOMAIN"));
  MOAT_ASSIGN_OR_RETURN(int type, socket_option(fd, SO_TYPE, "SO_TYPE"));
  MOAT_ASSIGN_OR_RETURN(int listening, socket_option(fd, SO_ACCEPTCONN, "SO_ACCEPTCONN"));
  if (domain != AF_UNIX || type != SOCK_STREAM || listening == 0)
    return fail(Error{EINVAL, "fd 3 from systemd is not a listening AF_UNIX SOCK_STREAM socket "
                              "(moatd.socket needs ListenStream=/a/path, Accept=no)"});
  return {};
}

// The path the socket is bound to, for the log and the daemon's options.
std::string bound_path(int fd) {
  sockaddr_un addr{};
  socklen_t len = sizeof addr;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0 ||
      len <= offsetof(sockaddr_un, sun_path) || addr.sun_path[0] == '\0')
    return "(systemd socket)";
  return std::string(addr.sun_path, strnlen(addr.sun_path, sizeof addr.sun_path));
}

// LISTEN_PID and LISTEN_FDS as sd_listen_fds(3) reads them: for this process, and one fd.
Result<void> check_listen_variables(const char* pid, const char* fds) {
  MOAT_ASSIGN_OR_RETURN(long listen_pid, listen_number("LISTEN_PID", pid));
  MOAT_ASSIGN_OR_RETURN(long listen_fds, listen_number("LISTEN_FDS", fds));
  // Variables meant for another process (a parent that was activated and did not unset them)
  // must not make moatd serve on whatever its fd 3 happens to be.
  if (listen_pid != ::getpid())
    return fail(Error{EINVAL, "LISTEN_PID=" + std::string(pid) + " is not this process (" +
                                  std::to_string(::getpid()) + "): the socket was for another"});
  if (listen_fds != 1)
    return fail(Error{EINVAL, "LISTEN_FDS=" + std::string(fds) +
                                  ": moatd takes exactly one socket (one ListenStream=)"});
  return {};
}

}  // namespace

Result<std::optional<ListeningSocket>> ListeningSocket::from_systemd() {
  const char* pid = std::getenv("LISTEN_PID");
  const char* fds = std::getenv("LISTEN_FDS");
  if (pid == nullptr && fds == nullptr) return std::optional<ListeningSocket>();
  const std::string pid_text = pid ? pid : "", fds_text = fds ? fds : "";
  // Before anything is checked: a child must never see them, whatever moatd does next.
  for (const char* name : {"LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"}) ::unsetenv(name);
  MOAT_TRY(check_listen_variables(pid ? pid_text.c_str() : nullptr,
                                  fds ? fds_text.c_str() : nullptr));
  MOAT_TRY(check_activated_fd(kSystemdFirstFd));
  // systemd passes it without FD_CLOEXEC: a session's processes must not inherit the socket
  // every user connects to.
  if (::fcntl(kSystemdFirstFd, F_SETFD, FD_CLOEXEC) != 0)
    return fail(Error::from_errno("fcntl(F_SETFD)", errno, "fd 3 from systemd"));
  ListeningSocket sock(bound_path(kSystemdFirstFd), UniqueFd(kSystemdFirstFd), 0, 0);
  sock.owns_path_ = false;
  return std::optional<ListeningSocket>(std::move(sock));
}

Result<ListeningSocket> ListeningSocket::claim(const std::string& path, int backlog) {
  MOAT_ASSIGN_OR_RETURN(sockaddr_un addr, address_of(path));
  MOAT_TRY(clear_stale(addr, path));
  MOAT_ASSIGN_OR_RETURN(UniqueFd fd, sys::make_socket(AF_UNIX, SOCK_STREAM));
  // bind fails with EADDRINUSE if another process created the path since clear_stale: the
  // path is never unlinked from under a socket that was live when we looked.
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
    return fail(Error::from_errno("bind", errno, path));
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return fail(Error::from_errno("lstat", errno, path));
  ListeningSocket sock(path, std::move(fd), st.st_dev, st.st_ino);
  // Anyone who can reach the socket may connect: SO_PEERCRED says who they are, and the
  // policy, the sandbox and the workspace ownership check decide what they may do.
  if (::chmod(path.c_str(), 0666) != 0) return fail(Error::from_errno("chmod", errno, path));
  if (::listen(sock.fd(), backlog) != 0) return fail(Error::from_errno("listen", errno, path));
  return sock;
}

ListeningSocket::ListeningSocket(ListeningSocket&& other) noexcept
    : path_(std::move(other.path_)),
      fd_(std::move(other.fd_)),
      dev_(other.dev_),
      ino_(other.ino_),
      owns_path_(other.owns_path_) {
  other.path_.clear();
}

void ListeningSocket::remove_path() const {
  if (path_.empty() || !owns_path_) return;
  struct stat st {};
  if (::lstat(path_.c_str(), &st) == 0 && st.st_dev == dev_ && st.st_ino == ino_)
    ::unlink(path_.c_str());
}

Result<PeerCred> peer_credentials(int fd) {
  struct ucred cred {};
  socklen_t len = sizeof cred;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0)
    return fail(Error::from_errno("getsockopt", errno, "SO_PEERCRED"));
  return PeerCred{cred.pid, cred.uid, cred.gid};
}

}  // namespace moat::sandbox
