// sandbox/listen_socket.h: the Unix socket path a shared moatd listens on, held for as long as
// it serves: a live socket is never taken over, and the path is removed at exit only if it is
// still the one bound here.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

#include "base/result.h"
#include "base/unique_fd.h"

namespace moat::sandbox {

class ListeningSocket {
 public:
  // Binds and listens on `path` (mode 0666: SO_PEERCRED says who connects). Fails with
  // EADDRINUSE when a process accepts connections there (a second moatd must not take the path
  // from the first and leave it unreachable), and with EEXIST when the path is not a socket.
  // A socket file nobody listens on (left by a moatd that crashed) is replaced.
  static Result<ListeningSocket> claim(const std::string& path, int backlog);
  // The socket systemd passed by socket activation (sd_listen_fds(3), done here: three
  // variables): LISTEN_PID is this process, LISTEN_FDS is 1, and fd 3 is a listening AF_UNIX
  // stream socket, made close-on-exec. nullopt when neither variable is set; otherwise an error
  // naming the variable or the fd and what is accepted. LISTEN_PID, LISTEN_FDS and
  // LISTEN_FDNAMES are removed from the environment either way, so no child sees them. The
  // path stays at exit: systemd owns it.
  static Result<std::optional<ListeningSocket>> from_systemd();

  ListeningSocket(ListeningSocket&& other) noexcept;
  ListeningSocket& operator=(ListeningSocket&&) = delete;
  ListeningSocket(const ListeningSocket&) = delete;
  // Removes the path if it is still this socket (same device and inode) and moatd bound it: a
  // path someone else has since bound, or replaced, stays, and so does systemd's.
  void remove_path() const;
  ~ListeningSocket() { remove_path(); }

  int fd() const { return fd_.get(); }
  const std::string& path() const { return path_; }

 private:
  ListeningSocket(std::string path, UniqueFd fd, dev_t dev, ino_t ino)
      : path_(std::move(path)), fd_(std::move(fd)), dev_(dev), ino_(ino) {}

  std::string path_;
  UniqueFd fd_;
  dev_t dev_ = 0;
  ino_t ino_ = 0;
  bool owns_path_ = true;  // false for systemd's socket: the unit, not moatd, owns the path
};

// The identity of the peer, from SO_PEERCRED: the kernel's word, not the client's.
struct PeerCred {
  pid_t pid = -1;
  uid_t uid = static_cast<uid_t>(-1);
  gid_t gid = static_cast<gid_t>(-1);
};
Result<PeerCred> peer_credentials(int fd);

}  // namespace moat::sandbox
