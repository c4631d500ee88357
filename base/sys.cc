// base/sys.cc: the generic raw fd-returning syscalls wrapped into UniqueFd (see sys.h).
#include "base/sys.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <memory>

namespace moat::sys {

Result<FdPair> make_pipe() {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return fail(Error::from_errno("pipe2", errno));
  return FdPair{UniqueFd(fds[0]), UniqueFd(fds[1])};
}

Result<FdPair> make_socketpair(int type) {
  int fds[2];
  if (socketpair(AF_UNIX, type | SOCK_CLOEXEC, 0, fds) != 0)
    return fail(Error::from_errno("socketpair", errno));
  return FdPair{UniqueFd(fds[0]), UniqueFd(fds[1])};
}

Result<UniqueFd> make_socket(int family, int type) {
  int fd = ::socket(family, type | SOCK_CLOEXEC, 0);
  if (fd < 0) return fail(Error::from_errno("socket", errno, std::to_string(family)));
  return UniqueFd(fd);
}

Result<UniqueFd> open_path(const std::string& path, int flags, mode_t mode) {
  int fd = ::open(path.c_str(), flags | O_CLOEXEC, mode);
  if (fd < 0) return fail(Error::from_errno("open", errno, path));
  return UniqueFd(fd);
}

Result<UniqueFd> open_beneath(int root, const std::string& rel, int flags, bool no_symlinks) {
  open_how how{};
  how.flags = static_cast<__u64>(flags | O_CLOEXEC);
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | (no_symlinks ? RESOLVE_NO_SYMLINKS : 0);
  long fd = syscall(SYS_openat2, root, rel.c_str(), &how, sizeof how);
  if (fd < 0) return fail(Error::from_errno("openat2", errno, rel));
  return UniqueFd(static_cast<int>(fd));
}

Result<UniqueFd> open_no_symlinks(const std::string& path, int flags) {
  open_how how{};
  how.flags = static_cast<__u64>(flags | O_CLOEXEC);
  how.resolve = RESOLVE_NO_SYMLINKS;
  long fd = syscall(SYS_openat2, AT_FDCWD, path.c_str(), &how, sizeof how);
  if (fd < 0) return fail(Error::from_errno("openat2", errno, path));
  return UniqueFd(static_cast<int>(fd));
}

Result<UniqueFd> duplicate(int fd) {
  int dup = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (dup < 0) return fail(Error::from_errno("fcntl(F_DUPFD_CLOEXEC)", errno));
  return UniqueFd(dup);
}

Result<UniqueFd> pidfd_open(pid_t pid) {
  int fd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  if (fd < 0) return fail(Error::from_errno("pidfd_open", errno, std::to_string(pid)));
  return UniqueFd(fd);
}

Result<UniqueFd> peer_pidfd(int sock) {
#ifndef SO_PEERPIDFD
  constexpr int SO_PEERPIDFD = 77;  // <asm-generic/socket.h>, Linux 6.5; glibc 2.36 lacks it
#endif
  int fd = -1;
  socklen_t len = sizeof fd;
  if (::getsockopt(sock, SOL_SOCKET, SO_PEERPIDFD, &fd, &len) != 0)
    return fail(Error::from_errno("getsockopt", errno, "SO_PEERPIDFD"));
  return UniqueFd(fd);  // the kernel makes it O_CLOEXEC
}

Result<UniqueFd> pidfd_getfd(int pidfd, int target) {
  int fd = static_cast<int>(syscall(SYS_pidfd_getfd, pidfd, target, 0));
  if (fd < 0) return fail(Error::from_errno("pidfd_getfd", errno, std::to_string(target)));
  return UniqueFd(fd);  // the kernel sets O_CLOEXEC on it
}

Result<UniqueFd> memfd(const char* name) {
  int fd = memfd_create(name, MFD_CLOEXEC);
  if (fd < 0) return fail(Error::from_errno("memfd_create", errno, name));
  return UniqueFd(fd);
}

Result<UniqueFd> signalfd_for_sigchld() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGCHLD);
  if (sigprocmask(SIG_BLOCK, &set, nullptr) != 0)
    return fail(Error::from_errno("sigprocmask", errno));
  int fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
  if (fd < 0) return fail(Error::from_errno("signalfd", errno));
  return UniqueFd(fd);
}

Result<UniqueFd> timerfd_after(double seconds) {
  int fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
  if (fd < 0) return fail(Error::from_errno("timerfd_create", errno));
  itimerspec spec{};
  double whole = std::floor(seconds);
  spec.it_value.tv_sec = static_cast<time_t>(whole);
  spec.it_value.tv_nsec = static_cast<long>((seconds - whole) * 1e9);
  if (spec.it_value.tv_sec == 0 && spec.it_value.tv_nsec == 0) spec.it_value.tv_nsec = 1;
  if (timerfd_settime(fd, 0, &spec, nullptr) != 0) {
    int err = errno;
    UniqueFd owner(fd);
    return fail(Error::from_errno("timerfd_settime", err));
  }
  return UniqueFd(fd);
}

int close_fds_except_in_child(const int* keep, std::size_t nkeep) {
  constexpr std::size_t kMaxKeep = 16;
  if (nkeep > kMaxKeep) return EINVAL;
  int sorted[kMaxKeep];
  std::size_t n = 0;
  for (std::size_t i = 0; i < nkeep; ++i) {  // insertion sort: no heap after fork
    std::size_t at = n++;
    for (; at > 0 && sorted[at - 1] > keep[i]; --at) sorted[at] = sorted[at - 1];
    sorted[at] = keep[i];
  }
  unsigned from = 3;
  for (std::size_t i = 0; i <= n; ++i) {
    // The gap below the next kept fd (or, past the last one, everything above).
    const unsigned to = i < n ? static_cast<unsigned>(sorted[i]) : ~0U;
    if (i < n && (sorted[i] < 3 || to < from)) continue;  // stdio, or a duplicate in keep
    if (to > from && syscall(SYS_close_range, from, to - 1, 0) != 0) return errno;
    if (i < n) from = to + 1;
  }
  return 0;
}

Result<void> send_with_fds(int sock, const void* data, std::size_t len, const int* fds,
                           std::size_t nfds, pid_t about_pid) {
  if (nfds > 8) return fail("send_with_fds: more than 8 fds");
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 8) + CMSG_SPACE(sizeof(ucred))] = {};
  iovec iov{const_cast<void*>(data), len};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  std::size_t used = 0;
  if (nfds > 0 || about_pid > 0) {
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
  }
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  if (nfds > 0) {
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
    std::memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
    used += CMSG_SPACE(sizeof(int) * nfds);
    c = CMSG_NXTHDR(&msg, c);
  }
  if (about_pid > 0) {
    ucred cred{about_pid, getuid(), getgid()};
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_CREDENTIALS;
    c->cmsg_len = CMSG_LEN(sizeof cred);
    std::memcpy(CMSG_DATA(c), &cred, sizeof cred);
    used += CMSG_SPACE(sizeof cred);
  }
  msg.msg_controllen = used;
  for (;;) {
    ssize_t n = sendmsg(sock, &msg, MSG_NOSIGNAL);
    if (n >= 0) {
      if (static_cast<std::size_t>(n) != len) return fail("sendmsg: short write");
      return {};
    }
    if (errno != EINTR) return fail(Error::from_errno("sendmsg", errno));
  }
}

Result<std::size_t> recv_with_fds(int sock, void* data, std::size_t len, UniqueFd* fds,
                                  std::size_t max_fds, std::size_t* nfds, pid_t* cred_pid) {
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 8) + CMSG_SPACE(sizeof(ucred))] = {};
  iovec iov{data, len};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n;
  do {
    n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return fail(Error::from_errno("recvmsg", errno));
  *nfds = 0;
  if (cred_pid != nullptr) *cred_pid = -1;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS && cred_pid != nullptr &&
        c->cmsg_len >= CMSG_LEN(sizeof(ucred))) {
      ucred cred;
      std::memcpy(&cred, CMSG_DATA(c), sizeof cred);
      *cred_pid = cred.pid;
      continue;
    }
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (std::size_t i = 0; i < count; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
      UniqueFd owned(fd);  // every received fd is owned, extra ones are closed here
      if (*nfds < max_fds) fds[(*nfds)++] = std::move(owned);
    }
  }
  if (msg.msg_flags & (MSG_CTRUNC | MSG_TRUNC)) return fail("recvmsg: message truncated");
  return static_cast<std::size_t>(n);
}

Result<void> write_all(int fd, const void* data, std::size_t len) {
  const char* p = static_cast<const char*>(data);
  while (len > 0) {
    ssize_t n = ::send(fd, p, len, MSG_NOSIGNAL);
    if (n < 0 && errno == ENOTSOCK) n = ::write(fd, p, len);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail(Error::from_errno("write", errno));
    }
    p += n;
    len -= static_cast<std::size_t>(n);
  }
  return {};
}

Result<bool> read_exact(int fd, void* data, std::size_t len, bool eof_ok) {
  char* p = static_cast<char*>(data);
  std::size_t got = 0;
  while (got < len) {
    ssize_t n = ::read(fd, p + got, len - got);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail(Error::from_errno("read", errno));
    }
    if (n == 0) {
      if (got == 0 && eof_ok) return false;
      return fail("read: unexpected end of stream");
    }
    got += static_cast<std::size_t>(n);
  }
  return true;
}

Result<std::string> read_to_end(int fd, std::size_t limit) {
  std::string out;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail(Error::from_errno("read", errno));
    }
    if (n == 0) return out;
    if (out.size() + static_cast<std::size_t>(n) > limit)
      return fail(Error::from_errno("read", EFBIG));
    out.append(buf, static_cast<std::size_t>(n));
  }
}

Result<std::string> read_file(const std::string& path, std::size_t limit) {
  MOAT_ASSIGN_OR_RETURN(UniqueFd fd, open_path(path, O_RDONLY | O_CLOEXEC));
  auto text = read_to_end(fd.get(), limit);
  if (!text) return fail(Error::from_errno("read", text.error().code, path));
  return text;
}

Result<void> for_each_dirent(int fd, const std::function<bool(const char*, unsigned char)>& fn) {
  constexpr std::size_t kBuf = 32 << 10;        // glibc's readdir buffer
  std::unique_ptr<char[]> buf(new char[kBuf]);  // not the stack: walks recurse, one per level
  for (;;) {
    const ssize_t n = ::getdents64(fd, buf.get(), kBuf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail(Error::from_errno("getdents64", errno, "a directory"));
    if (n == 0) return {};
    for (ssize_t at = 0; at < n;) {
      const auto* d = reinterpret_cast<const struct dirent64*>(buf.get() + at);
      at += d->d_reclen;
      if (!std::strcmp(d->d_name, ".") || !std::strcmp(d->d_name, "..")) continue;
      if (!fn(d->d_name, d->d_type)) return {};
    }
  }
}

}  // namespace moat::sys
