// sandbox/nested_git.cc: the walk for `.git` entries (openat beneath the workspace fd, O_NOFOLLOW
// at every step, never across a mount) and their removal by fd.
#include "sandbox/nested_git.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>
#include <memory>

#include "base/sys.h"

namespace moat::sandbox {
namespace {

// Deeper directories hold one fd each while the walk is in them; past this depth a directory
// is named as not searched, never silently left out.
constexpr int kMaxDepth = 128;
// A sandbox still running other calls may refill a `.git` while it is emptied.
constexpr int kEmptyRounds = 4;

// Opens the directory `name` in `dfd` without following a symlink. One the sandbox made
// unreadable to moatd (chmod 000, to hide what is below it) is given its owner's rwx first:
// through an O_PATH fd and /proc/self/fd, so the mode changes on that very inode and a
// symlink swapped in meanwhile is never followed to a host file.
UniqueFd open_dir(int dfd, const char* name, dev_t dev, bool for_removal) {
  UniqueFd fd(::openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd.valid() && errno == EACCES) {
    UniqueFd path(::openat(dfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC));
    struct stat st {};
    if (!path.valid() || ::fstat(path.get(), &st) != 0 || !S_ISDIR(st.st_mode)) return UniqueFd();
    const std::string proc = "/proc/self/fd/" + std::to_string(path.get());
    if (::chmod(proc.c_str(), (st.st_mode & 07777) | S_IRWXU) != 0) return UniqueFd();
    fd.reset(::open(proc.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  }
  struct stat st {};
  if (!fd.valid() || ::fstat(fd.get(), &st) != 0) return UniqueFd();
  if (st.st_dev != dev) {  // a mount point: another file system's files are not the session's
    errno = EXDEV;
    return UniqueFd();
  }
  // Removing entries needs write and search permission on the directory itself (a `.git` the
  // sandbox made read-only); the walk changes no other directory's mode.
  if (for_removal && (st.st_mode & S_IRWXU) != S_IRWXU)
    (void)::fchmod(fd.get(), (st.st_mode & 07777) | S_IRWXU);
  return fd;
}

Result<void> remove_entry(int dfd, const char* name, dev_t dev, int depth);

// Removes everything in the directory `fd`.
Result<void> empty_dir(UniqueFd fd, dev_t dev, int depth) {
  if (depth > kMaxDepth) return fail(Error{ELOOP, "deeper than " + std::to_string(kMaxDepth)});
  Result<void> out;
  auto read = sys::for_each_dirent(fd.get(), [&](const char* name, unsigned char) {
    out = remove_entry(fd.get(), name, dev, depth + 1);
    return bool(out);
  });
  if (!read && read.error().code != ENOENT) return read;  // ENOENT: removed meanwhile
  return out;
}

// Unlinks `name` in `dfd`: a file or symlink at once (a symlink is the link, never its target),
// a directory once emptied. A directory swapped for a symlink meanwhile is unlinked as a link.
Result<void> remove_entry(int dfd, const char* name, dev_t dev, int depth) {
  for (int round = 0; round < kEmptyRounds; ++round) {
    if (::unlinkat(dfd, name, 0) == 0 || errno == ENOENT) return {};
    struct stat parent {};
    if (errno == EACCES && ::fstat(dfd, &parent) == 0 &&
        ::fchmod(dfd, (parent.st_mode & 07777) | S_IRWXU) == 0)
      continue;  // the walk's directory is read-only to its owner: writable, then again
    if (errno != EISDIR && errno != EPERM) return fail(Error{errno, std::string("unlinkat")});
    UniqueFd sub = open_dir(dfd, name, dev, true);
    if (!sub.valid()) {
      if (errno == ENOTDIR || errno == ELOOP || errno == ENOENT) continue;  // swapped: again
      return fail(Error{errno, std::string("openat")});
    }
    MOAT_TRY(empty_dir(std::move(sub), dev, depth));
    if (::unlinkat(dfd, name, AT_REMOVEDIR) == 0 || errno == ENOENT) return {};
    if (errno != ENOTEMPTY && errno != ENOTDIR) return fail(Error{errno, std::string("rmdir")});
  }
  return fail(Error{EAGAIN, "refilled while it was removed"});
}

const char* type_of(mode_t m) {
  return S_ISDIR(m) ? "directory" : S_ISREG(m) ? "file" : S_ISLNK(m) ? "symlink" : "other";
}

// Calls `on_git(dirfd, rel, statx)` for every `.git` entry below the directory `fd`, the top's
// own `.git` left out; never enters a `.git`. A directory it cannot search is reported as a
// `.git` of type "other" with the reason, so a sweep never passes over it in silence.
using OnGit = std::function<void(int, const std::string&, const struct statx&)>;
using OnUnsearched = std::function<void(const std::string&, const std::string&)>;

void walk(UniqueFd fd, const std::string& rel, dev_t dev, int depth, const OnGit& on_git,
          const OnUnsearched& unsearched);

// One entry of the directory `dfd` (named `rel`) for walk().
void walk_entry(int dfd, const char* name, unsigned char type, const std::string& rel, dev_t dev,
                int depth, const OnGit& on_git, const OnUnsearched& unsearched) {
  if (!std::strcmp(name, ".git")) {
    struct statx sx {};
    if (rel.empty()) return;  // the workspace's own repository
    if (::statx(dfd, name, AT_SYMLINK_NOFOLLOW, STATX_TYPE | STATX_INO | STATX_BTIME, &sx) == 0)
      on_git(dfd, rel + "/" + name, sx);
    return;
  }
  if (type != DT_DIR && type != DT_UNKNOWN) return;
  const std::string child = rel.empty() ? std::string(name) : rel + "/" + name;
  UniqueFd sub = open_dir(dfd, name, dev, false);
  if (!sub.valid()) {
    // Gone, or not a directory after all (DT_UNKNOWN, or swapped): nothing to search.
    if (errno == ENOENT || errno == ENOTDIR || errno == ELOOP) return;
    if (errno == EXDEV) return;  // a mount point: not the session's files
    return unsearched(child, std::strerror(errno));
  }
  if (depth + 1 > kMaxDepth)
    return unsearched(child, "deeper than " + std::to_string(kMaxDepth) + " directories");
  walk(std::move(sub), child, dev, depth + 1, on_git, unsearched);
}

void walk(UniqueFd fd, const std::string& rel, dev_t dev, int depth, const OnGit& on_git,
          const OnUnsearched& unsearched) {
  auto read = sys::for_each_dirent(fd.get(), [&](const char* name, unsigned char type) {
    walk_entry(fd.get(), name, type, rel, dev, depth, on_git, unsearched);
    return true;
  });
  // ENOENT: the directory was removed meanwhile, nothing of it is left to search.
  if (!read && read.error().code != ENOENT) unsearched(rel, std::strerror(read.error().code));
}

}  // namespace

Result<NestedGitWatch> NestedGitWatch::take(int workspace_fd,
                                            const std::vector<std::string>& watched) {
  UniqueFd fd(::fcntl(workspace_fd, F_DUPFD_CLOEXEC, 0));
  if (!fd.valid()) return fail(Error{errno, "dup(workspace)"});
  NestedGitWatch w(std::move(fd));
  struct stat st {};
  if (::fstat(w.fd_.get(), &st) != 0) return fail(Error{errno, "fstat(workspace)"});
  UniqueFd top(::openat(w.fd_.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!top.valid()) return fail(Error{errno, "openat(workspace)"});
  walk(
      std::move(top), "", st.st_dev, 0,
      [&w](int, const std::string&, const struct statx& sx) {
        w.known_.insert(Key{makedev(sx.stx_dev_major, sx.stx_dev_minor), sx.stx_ino,
                            (sx.stx_mask & STATX_BTIME)
                                ? sx.stx_btime.tv_sec * 1000000000LL + sx.stx_btime.tv_nsec
                                : 0});
      },
      [](const std::string&, const std::string&) {});
  struct stat entry {};
  for (const std::string& name : watched)
    if (::fstatat(w.fd_.get(), name.c_str(), &entry, AT_SYMLINK_NOFOLLOW) != 0 && errno == ENOENT)
      w.absent_.push_back(name);
  return w;
}

std::vector<RemovedGit> NestedGitWatch::sweep() {
  std::lock_guard lock(mu_);
  std::vector<RemovedGit> found;
  struct stat st {};
  UniqueFd top(::openat(fd_.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!top.valid() || ::fstat(top.get(), &st) != 0) {
    found.push_back(
        {"", "other", std::string("the workspace is not searched: ") + std::strerror(errno)});
    return found;
  }
  walk(
      std::move(top), "", st.st_dev, 0,
      [&](int dfd, const std::string& rel, const struct statx& sx) {
        const Key key{makedev(sx.stx_dev_major, sx.stx_dev_minor), sx.stx_ino,
                      (sx.stx_mask & STATX_BTIME)
                          ? sx.stx_btime.tv_sec * 1000000000LL + sx.stx_btime.tv_nsec
                          : 0};
        if (known_.count(key)) return;
        auto r = remove_entry(dfd, ".git", st.st_dev, 0);
        found.push_back({rel, type_of(sx.stx_mode), r ? "" : r.error().message()});
      },
      [&](const std::string& rel, const std::string& why) {
        found.push_back({rel, "other", "not searched for .git: " + why});
      });
  return found;
}

std::vector<RemovedGit> NestedGitWatch::sweep_created() {
  std::lock_guard lock(mu_);
  std::vector<RemovedGit> found;
  struct stat top {};
  if (::fstat(fd_.get(), &top) != 0) return found;
  for (const std::string& name : absent_) {
    const std::size_t slash = name.rfind('/');
    const std::string parent_rel = slash == std::string::npos ? "." : name.substr(0, slash);
    const std::string leaf = name.substr(slash == std::string::npos ? 0 : slash + 1);
    auto parent = sys::open_beneath(fd_.get(), parent_rel, O_RDONLY | O_DIRECTORY, true);
    if (!parent) continue;  // no parent, or a symlink on the way: the name does not exist here
    struct stat st {};
    if (::fstatat(parent->get(), leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    auto r = remove_entry(parent->get(), leaf.c_str(), top.st_dev, 0);
    found.push_back({name, type_of(st.st_mode), r ? "" : r.error().message(), true});
  }
  return found;
}

}  // namespace moat::sandbox
