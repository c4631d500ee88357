// base/unique_fd.h: UniqueFd, the only owner of a file descriptor.
#pragma once

#include <unistd.h>

#include <cerrno>
#include <utility>

namespace moat {

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& o) noexcept : fd_(o.release()) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept {
    reset(o.release());
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  // Only to hand the fd to dup2, sendmsg or exec.
  [[nodiscard]] int release() { return std::exchange(fd_, -1); }
  void reset(int fd = -1) {
    if (fd_ >= 0) {
      int saved = errno;  // keep the errno the caller is about to report
      ::close(fd_);       // no EINTR retry: on Linux the fd is released either way
      errno = saved;
    }
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

// A borrowed fd: the callee uses it and never closes it.
struct BorrowedFd {
  int fd = -1;
  BorrowedFd(int f) : fd(f) {}                    // NOLINT: implicit on purpose
  BorrowedFd(const UniqueFd& u) : fd(u.get()) {}  // NOLINT
  int get() const { return fd; }
};

}  // namespace moat
