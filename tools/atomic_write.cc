// tools/atomic_write.cc: mkdirat for missing parents, O_EXCL temp + fsync + renameat.
#include "tools/atomic_write.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <vector>

#include "base/random.h"
#include "base/unique_fd.h"
#include "tools/resolve.h"

namespace moat::tools {
namespace {

// Opens the canonical directory, creating the missing tail of it with mkdirat.
Result<UniqueFd> open_dir(const std::string& dir, bool create) {
  auto fd = open_canonical(dir, O_PATH | O_DIRECTORY);
  if (fd || fd.error().code != ENOENT || !create) return fd;
  const std::size_t slash = dir.rfind('/');
  const std::string parent = slash == 0 ? "/" : dir.substr(0, slash);
  MOAT_ASSIGN_OR_RETURN(UniqueFd up, open_dir(parent, create));
  const std::string name = dir.substr(slash + 1);
  if (::mkdirat(up.get(), name.c_str(), 0777) != 0 && errno != EEXIST)
    return fail(Error::from_errno("mkdirat", errno, dir));
  return open_canonical(dir, O_PATH | O_DIRECTORY);
}

Result<void> write_all(int fd, std::string_view bytes, const std::string& what) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail(Error::from_errno("write", errno, what));
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return {};
}

std::string temp_name(const std::string& name) {
  return "." + name + ".moat-" + random_hex_or_abort(4);
}

}  // namespace

Result<void> replace_file(const std::string& canonical, std::string_view content,
                          bool create_parents) {
  const std::size_t slash = canonical.rfind('/');
  if (slash == std::string::npos || slash + 1 == canonical.size())
    return fail(Error{EINVAL, "not a file path: " + canonical});
  const std::string dir = slash == 0 ? "/" : canonical.substr(0, slash);
  const std::string name = canonical.substr(slash + 1);
  // An O_PATH fd serves as the dirfd of the *at calls below (open(2), O_PATH) and needs
  // no read permission on the directory.
  MOAT_ASSIGN_OR_RETURN(UniqueFd dirfd, open_dir(dir, create_parents));
  struct stat old {};
  const bool existed = ::fstatat(dirfd.get(), name.c_str(), &old, AT_SYMLINK_NOFOLLOW) == 0;
  if (existed && S_ISDIR(old.st_mode)) return fail(Error{EISDIR, canonical + " is a directory"});
  const mode_t mode = existed && S_ISREG(old.st_mode) ? (old.st_mode & 07777) : 0666;
  const std::string tmp = temp_name(name);
  const int raw = ::openat(dirfd.get(), tmp.c_str(),
                           O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
  if (raw < 0) return fail(Error::from_errno("openat", errno, dir + "/" + tmp));
  UniqueFd fd(raw);
  auto cleanup_on_error = [&](Error e) {
    ::unlinkat(dirfd.get(), tmp.c_str(), 0);
    return fail(std::move(e));
  };
  if (existed && S_ISREG(old.st_mode)) {
    // The umask applied at creation; the old file's bits are what the user chose.
    if (::fchmod(fd.get(), mode) != 0)
      return cleanup_on_error(Error::from_errno("fchmod", errno, tmp));
    if (::fchown(fd.get(), old.st_uid, old.st_gid) != 0) {
      // Not allowed to give the file away (not root): it stays ours, which is correct.
    }
  }
  if (auto w = write_all(fd.get(), content, canonical); !w) return cleanup_on_error(w.error());
  if (::fsync(fd.get()) != 0) return cleanup_on_error(Error::from_errno("fsync", errno, canonical));
  if (::renameat(dirfd.get(), tmp.c_str(), dirfd.get(), name.c_str()) != 0)
    return cleanup_on_error(Error::from_errno("renameat", errno, canonical));
  // The rename is durable only once the directory is: fsync(2) NOTES.
  if (auto d = open_canonical(dir, O_RDONLY | O_DIRECTORY)) ::fsync(d->get());
  return {};
}

}  // namespace moat::tools
