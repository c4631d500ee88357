// sandbox/exec_stdio.cc: the kinds of fd an exec frame may carry (see exec_stdio.h).
#include "sandbox/exec_stdio.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <string>

namespace moat::sandbox {
namespace {

constexpr const char* kStdioNames[] = {"stdin", "stdout", "stderr"};

// Unix98 pty slaves: majors 136-143 (Documentation/admin-guide/devices.txt).
bool is_pty_slave(dev_t rdev) { return major(rdev) >= 136 && major(rdev) <= 143; }

// Major 1: null 3, zero 5, full 7, random 8, urandom 9. Not mem 1, kmem 2, port 4, kmsg 11.
bool is_harmless_memory_device(dev_t rdev) {
  if (major(rdev) != 1) return false;
  const unsigned m = minor(rdev);
  return m == 3 || m == 5 || m == 7 || m == 8 || m == 9;
}

int socket_option(int fd, int name) {
  int value = -1;
  socklen_t len = sizeof value;
  return getsockopt(fd, SOL_SOCKET, name, &value, &len) == 0 ? value : -1;
}

// Empty for a unix stream or seqpacket socket connected to its one peer (a journal's stdout
// stream, a socketpair): the command talks to the peer the caller chose, as with bwrap, which
// passes every fd. Refused: a listening socket (accept() would take the host's connections), a
// datagram socket (sendto() may name any address, and an abstract one is looked up in the
// network namespace that made the socket: the host's), an unconnected one (connect() likewise)
// and every other family (an AF_INET socket reaches past the sandbox's network namespace).
std::string refused_socket(int fd) {
  const int domain = socket_option(fd, SO_DOMAIN), type = socket_option(fd, SO_TYPE);
  if (domain != AF_UNIX)
    return "a socket of family " + std::to_string(domain) + " (not AF_UNIX)";
  if (type != SOCK_STREAM && type != SOCK_SEQPACKET) return "a unix datagram socket";
  if (socket_option(fd, SO_ACCEPTCONN) != 0) return "a listening unix socket";
  sockaddr_storage peer{};
  socklen_t len = sizeof peer;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &len) != 0)
    return "an unconnected unix socket";
  return "";
}

// Empty when the fd is of an accepted kind; otherwise what it is.
std::string refused_kind(int fd, bool* pty) {
  const int flags = fcntl(fd, F_GETFL);
  if (flags < 0) return "not an open file descriptor";
  if (flags & O_PATH) return "an O_PATH descriptor";
  struct stat st {};
  if (fstat(fd, &st) != 0) return "not an open file descriptor";
  if (S_ISFIFO(st.st_mode) || S_ISREG(st.st_mode)) return "";
  if (S_ISCHR(st.st_mode) && is_pty_slave(st.st_rdev)) {
    *pty = true;
    return "";
  }
  if (S_ISCHR(st.st_mode) && is_harmless_memory_device(st.st_rdev)) return "";
  if (S_ISSOCK(st.st_mode)) return refused_socket(fd);
  if (S_ISDIR(st.st_mode)) return "a directory";
  if (S_ISBLK(st.st_mode)) return "a block device";
  if (S_ISCHR(st.st_mode))
    return "the character device " + std::to_string(major(st.st_rdev)) + ":" +
           std::to_string(minor(st.st_rdev));
  return "of an unknown kind";
}

}  // namespace

Result<ExecStdio> check_exec_stdio(const std::array<UniqueFd, 3>& fds) {
  ExecStdio out;
  for (int i = 0; i < 3; ++i) {
    bool pty = false;
    const std::string why = refused_kind(fds[i].get(), &pty);
    if (!why.empty())
      return fail(std::string("exec: the command's ") + kStdioNames[i] + " is " + why +
                  "; accepted are a pipe, a regular file, a connected unix stream socket, a "
                  "pseudo-terminal (/dev/pts) or /dev/null, zero, full, random, urandom "
                  "(redirect it, e.g. `| cat`)");
    out.terminal = out.terminal || pty;
  }
  return out;
}

}  // namespace moat::sandbox
