// base/sys.h: the generic raw fd-returning syscalls (pipes, sockets, opens, pidfds, memfds,
// signalfds, timerfds) and the read/write loops, each fd a UniqueFd, always close-on-exec.
// Every folder uses these instead of its own; the sandbox-only ones are in sandbox/sys.h.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <functional>
#include <limits>
#include <string>
#include <utility>

#include "base/result.h"
#include "base/unique_fd.h"

namespace moat::sys {

struct FdPair {
  UniqueFd first;   // pipe: read end; socketpair: one end
  UniqueFd second;  // pipe: write end; socketpair: the other end
};

Result<FdPair> make_pipe();
Result<FdPair> make_socketpair(int type);  // AF_UNIX; type is SOCK_STREAM or SOCK_SEQPACKET
Result<UniqueFd> make_socket(int family, int type);
Result<UniqueFd> open_path(const std::string& path, int flags, mode_t mode = 0);
// openat2 with RESOLVE_BENEATH|RESOLVE_NO_MAGICLINKS (plus RESOLVE_NO_SYMLINKS when asked):
// EXDEV when rel escapes root, ELOOP when a component is a symlink and symlinks are refused.
Result<UniqueFd> open_beneath(int root, const std::string& rel, int flags, bool no_symlinks);
// openat2 of an absolute path with RESOLVE_NO_SYMLINKS: ELOOP when any component, the last
// included, is a symlink (or a magic link), so the fd names the directory the text names.
Result<UniqueFd> open_no_symlinks(const std::string& path, int flags);
// A second fd for the same open file (F_DUPFD_CLOEXEC).
Result<UniqueFd> duplicate(int fd);
Result<UniqueFd> pidfd_open(pid_t pid);
// The pidfd of the process that connected the Unix socket `sock` (SO_PEERPIDFD, Linux 6.5):
// unlike SO_PEERCRED's pid it cannot name another process once that pid is reused.
Result<UniqueFd> peer_pidfd(int sock);
// A copy of the process's fd `target` (pidfd_getfd(2); needs ptrace access to it).
Result<UniqueFd> pidfd_getfd(int pidfd, int target);
Result<UniqueFd> memfd(const char* name);
Result<UniqueFd> signalfd_for_sigchld();  // blocks SIGCHLD in the caller first
Result<UniqueFd> timerfd_after(double seconds);

// Sends len bytes with up to 4 fds attached (SCM_RIGHTS). The fds stay owned by the caller.
// With about_pid > 0 it also attaches SCM_CREDENTIALS naming that process (the caller's uid
// and gid): the kernel lets a sender with CAP_SYS_ADMIN over its pid namespace name any of
// its processes, and translates the pid into the receiver's namespace when it is received.
Result<void> send_with_fds(int sock, const void* data, std::size_t len, const int* fds,
                           std::size_t nfds, pid_t about_pid = 0);
// Receives one message and up to max_fds fds into fds[]; returns the byte count (0 = EOF).
// With cred_pid, the SCM_CREDENTIALS pid of the message (needs SO_PASSCRED on sock), in this
// process's pid namespace, or -1 when none came.
Result<std::size_t> recv_with_fds(int sock, void* data, std::size_t len, UniqueFd* fds,
                                  std::size_t max_fds, std::size_t* nfds,
                                  pid_t* cred_pid = nullptr);

// In a child forked from a threaded process (between fork and exec or _exit): closes every fd
// from 3 up except the `nkeep` in `keep` (at most 16), so the child holds nothing of another
// thread's (another session's pipes, sockets, logs) while it waits. No heap, async-signal-safe
// (close_range over the gaps between the kept fds). Returns 0 or the errno.
int close_fds_except_in_child(const int* keep, std::size_t nkeep);

// Writes all of data (retrying short writes and EINTR); MSG_NOSIGNAL on sockets.
Result<void> write_all(int fd, const void* data, std::size_t len);
// Reads exactly len bytes; EOF before that is an error with code 0 unless nothing was read
// and eof_ok, then returns false.
Result<bool> read_exact(int fd, void* data, std::size_t len, bool eof_ok);
// Reads until EOF, at most limit bytes (more is an EFBIG error); without a limit, a caller
// that has bounded the file already (a size it checked, a file it owns).
Result<std::string> read_to_end(int fd,
                                std::size_t limit = std::numeric_limits<std::size_t>::max());
// The whole of a small file named by path (O_CLOEXEC, at most limit bytes), with every failure
// an error. For /proc and /sys files, whose read fails when the process went in the meantime
// (ESRCH): std::ifstream read through an istreambuf_iterator throws there, which in a moatd
// thread is std::terminate.
Result<std::string> read_file(const std::string& path, std::size_t limit = 1 << 20);

// Calls fn(name, d_type) for each entry of the directory `fd` (opened O_RDONLY|O_DIRECTORY)
// but "." and "..", read by getdents64 straight from the fd, until fn returns false: none of
// fdopendir's fstat and two fcntls, which a tree walk paid once per directory (issue 30).
// Errors: the errno of a failed read.
Result<void> for_each_dirent(int fd, const std::function<bool(const char*, unsigned char)>& fn);

}  // namespace moat::sys
