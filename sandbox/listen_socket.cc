// sandbox/listen_socket.cc: claiming a Unix socket path (see listen_socket.h).
#include "sandbox/listen_socket.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
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

}  // namespace

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
    : path_(std::move(other.path_)), fd_(std::move(other.fd_)), dev_(other.dev_), ino_(other.ino_) {
  other.path_.clear();
}

ListeningSocket::~ListeningSocket() {
  if (path_.empty()) return;
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
