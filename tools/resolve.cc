// tools/resolve.cc: openat2-based canonicalisation. The two openat2 calls the file tools need
// live here, not in base/sys.h: they fall back to openat where the seccomp filter hides
// openat2, and RESOLVE_IN_ROOT retries on EAGAIN.
#include "tools/resolve.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "base/sys.h"

namespace moat::tools {
namespace {

std::atomic<bool> g_use_openat2{true};

std::vector<std::string> split_components(const std::string& path);

// openat2(2) is missing (ENOSYS) where the sandbox's seccomp filter hides it (its how
// struct sits behind a pointer a filter cannot read). The equivalent then:
// - RESOLVE_IN_ROOT: a plain openat. In a worker the process root *is* the session's
//   root, so ".." and absolute symlinks stop there exactly as RESOLVE_IN_ROOT would.
// - RESOLVE_NO_SYMLINKS: one openat per component with O_NOFOLLOW, and a symlink at any
//   step fails with ELOOP, as openat2 would.
Result<UniqueFd> open_without_symlinks(int dirfd, const std::string& path, int flags, mode_t mode) {
  const auto parts = split_components(path);
  UniqueFd cur(::openat(dirfd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!cur.valid()) return fail(Error::from_errno("openat", errno, path));
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (parts[i] == ".") continue;
    if (parts[i] == "..") return fail(Error::from_errno("openat", EXDEV, path));
    struct stat st {};
    if (::fstatat(cur.get(), parts[i].c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        S_ISLNK(st.st_mode))
      return fail(Error::from_errno("openat", ELOOP, path));
    const bool last = i + 1 == parts.size();
    const int f =
        last ? (flags | O_NOFOLLOW | O_CLOEXEC) : (O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    const int fd = ::openat(cur.get(), parts[i].c_str(), f, mode);
    if (fd < 0) return fail(Error::from_errno("openat", errno, path));
    cur.reset(fd);
  }
  if (parts.empty() || parts.back() == ".") {
    // The directory itself, reopened with the caller's flags.
    const int fd = ::openat(cur.get(), ".", flags | O_CLOEXEC, mode);
    if (fd < 0) return fail(Error::from_errno("openat", errno, path));
    cur.reset(fd);
  }
  return cur;
}

Result<UniqueFd> openat2_fd(int dirfd, const std::string& path, int flags, mode_t mode,
                            std::uint64_t resolve) {
  if (g_use_openat2.load()) {
    open_how how{};
    how.flags = static_cast<std::uint64_t>(flags | O_CLOEXEC);
    how.mode = (flags & O_CREAT) ? mode : 0;
    how.resolve = resolve;
    long fd;
    do {
      fd = syscall(SYS_openat2, dirfd, path.c_str(), &how, sizeof how);
    } while (fd < 0 && errno == EAGAIN);  // RESOLVE_IN_ROOT retries on a concurrent rename
    if (fd >= 0) return UniqueFd(static_cast<int>(fd));
    if (errno != ENOSYS) return fail(Error::from_errno("openat2", errno, path));
  }
  const std::string rel = path.empty() || path[0] != '/' ? path : path.substr(1);
  if (resolve & RESOLVE_NO_SYMLINKS) return open_without_symlinks(dirfd, rel, flags, mode);
  const int fd = ::openat(dirfd, rel.empty() ? "." : rel.c_str(), flags | O_CLOEXEC, mode);
  if (fd < 0) return fail(Error::from_errno("openat", errno, path));
  return UniqueFd(fd);
}

Result<UniqueFd> open_root() { return sys::open_path("/", O_PATH | O_DIRECTORY); }

std::vector<std::string> split_components(const std::string& path) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < path.size()) {
    std::size_t slash = path.find('/', i);
    if (slash == std::string::npos) slash = path.size();
    if (slash > i) out.push_back(path.substr(i, slash - i));
    i = slash + 1;
  }
  return out;
}

std::string join_components(const std::vector<std::string>& parts, std::size_t n) {
  std::string out;
  for (std::size_t i = 0; i < n; ++i) out += "/" + parts[i];
  return out.empty() ? "/" : out;
}

}  // namespace

Result<std::string> fd_path(int fd) {
  char link[64];
  std::snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  char buf[PATH_MAX + 1];
  const ssize_t n = ::readlink(link, buf, PATH_MAX);
  if (n < 0) return fail(Error::from_errno("readlink", errno, link));
  return std::string(buf, static_cast<std::size_t>(n));
}

namespace {

// One attempt; ESTALE when the file was replaced (renamed over) between the open and the
// readlink, which then names the unlinked inode "<path> (deleted)" (proc(5)).
Result<Resolved> resolve_once(int root, const std::string& full) {
  const auto parts = split_components(full);
  // The longest prefix that exists; the components after it must be plain names.
  for (std::size_t n = parts.size() + 1; n-- > 0;) {
    auto fd = openat2_fd(root, join_components(parts, n), O_PATH, 0,
                         RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS);
    if (!fd) {
      if (fd.error().code == ENOENT) continue;
      return fail(fd.error());
    }
    // readlink before fstat: an unlink between them then shows as st_nlink == 0.
    MOAT_ASSIGN_OR_RETURN(std::string base, fd_path(fd->get()));
    struct stat st {};
    if (::fstat(fd->get(), &st) != 0) return fail(Error::from_errno("fstat", errno, full));
    if (st.st_nlink == 0 && !S_ISDIR(st.st_mode))
      return fail(Error::from_errno("resolve", ESTALE, full));
    Resolved r;
    r.exists = n == parts.size();
    r.is_dir = S_ISDIR(st.st_mode);
    if (!r.exists && !r.is_dir) return fail(Error::from_errno("resolve", ENOTDIR, base));
    r.path = base;
    for (std::size_t i = n; i < parts.size(); ++i) {
      if (parts[i] == ".") continue;
      if (parts[i] == "..")
        return fail(Error{EINVAL, "'..' after a directory that does not exist in " + full});
      if (r.path.back() != '/') r.path += '/';
      r.path += parts[i];
    }
    return r;
  }
  return fail(Error::from_errno("resolve", ENOENT, full));
}

}  // namespace

Result<Resolved> resolve_in_root(const std::string& path, const std::string& cwd) {
  if (path.empty()) return fail(Error{ENOENT, "empty path"});
  const std::string full = path[0] == '/' ? path : cwd + "/" + path;
  MOAT_ASSIGN_OR_RETURN(UniqueFd root, open_root());
  // A concurrent atomic replace (our own write/edit, or the sandboxed code's) can unlink
  // the inode we opened; the path is then simply resolved again.
  for (int attempt = 0;; ++attempt) {
    auto r = resolve_once(root.get(), full);
    if (r || r.error().code != ESTALE || attempt == 100) return r;
  }
}

Result<UniqueFd> open_canonical(const std::string& canonical, int flags, mode_t mode) {
  MOAT_ASSIGN_OR_RETURN(UniqueFd root, open_root());
  return openat2_fd(root.get(), canonical, flags, mode,
                    RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
}

void set_openat2_enabled_for_testing(bool enabled) { g_use_openat2 = enabled; }

}  // namespace moat::tools
