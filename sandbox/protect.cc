// sandbox/protect.cc: masking protected workspace paths (see protect.h).
#include "sandbox/protect.h"

#include <fcntl.h>
#include <fnmatch.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>

#include "base/unique_fd.h"
#include "sandbox/sys.h"

namespace moat::sandbox {
namespace {

constexpr const char* kEmptyFile = "/run/moat/empty";
constexpr const char* kEmptyDir = "/run/moat/empty.d";
constexpr std::size_t kMaxGlobEntries = 20000;  // a huge tree must not stall every call

bool is_glob(const std::string& p) { return p.find_first_of("*?[") != std::string::npos; }

Result<std::uint64_t> mount_id(const std::string& path) {
  struct statx st{};
  if (statx(AT_FDCWD, path.c_str(), AT_SYMLINK_NOFOLLOW, STATX_MNT_ID, &st) != 0)
    return fail(Error::from_errno("statx", errno, path));
  return static_cast<std::uint64_t>(st.stx_mnt_id);
}

// A mount point differs in mount id from its parent directory.
bool is_mount_point(const std::string& path) {
  auto self = mount_id(path);
  auto parent = mount_id(path.substr(0, path.rfind('/')));
  return self && parent && *self != *parent;
}

Result<void> bind_read_only(const std::string& source, const std::string& target) {
  MOAT_ASSIGN_OR_RETURN(UniqueFd tree, sys::clone_tree(source, true));
  mount_attr attr{};
  attr.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
  if (mount_setattr(tree.get(), "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof attr) != 0)
    return fail(Error::from_errno("mount_setattr", errno, target));
  // No MOVE_MOUNT_T_SYMLINKS: a symlink target is covered itself, never followed.
  if (move_mount(tree.get(), "", AT_FDCWD, target.c_str(), MOVE_MOUNT_F_EMPTY_PATH) != 0)
    return fail(Error::from_errno("move_mount", errno, target));
  return {};
}

// Every directory between the workspace and a protected path becomes a mount point (a
// read-write bind of itself): rename(2) and rmdir(2) of a mount point fail with EBUSY, so the
// code cannot move `.git` aside and create a fresh, unmasked `.git/hooks` in the same call.
Result<void> pin_ancestors(const std::string& workspace, const std::string& target) {
  for (std::size_t pos = target.find('/', workspace.size() + 1); pos != std::string::npos;
       pos = target.find('/', pos + 1)) {
    std::string dir = target.substr(0, pos);
    if (is_mount_point(dir)) continue;
    MOAT_ASSIGN_OR_RETURN(UniqueFd tree, sys::clone_tree(dir, true));
    if (move_mount(tree.get(), "", AT_FDCWD, dir.c_str(), MOVE_MOUNT_F_EMPTY_PATH) != 0)
      return fail(Error::from_errno("move_mount", errno, dir));
  }
  return {};
}

// Records a directory this session created to mount on (see Placeholder).
Result<void> record_placeholder(const std::string& workspace, const std::string& target,
                                std::vector<Placeholder>* created) {
  struct stat st;
  if (::lstat(target.c_str(), &st) != 0) return fail(Error::from_errno("lstat", errno, target));
  if (created != nullptr)
    created->push_back({target.substr(workspace.size() + 1), st.st_dev, st.st_ino});
  return {};
}

Result<void> mask_one(const std::string& workspace, const std::string& target,
                      std::vector<Placeholder>* created) {
  MOAT_TRY(pin_ancestors(workspace, target));
  if (is_mount_point(target)) return {};  // masked by an earlier call
  struct stat st;
  if (::lstat(target.c_str(), &st) != 0) {
    if (errno != ENOENT) return fail(Error::from_errno("lstat", errno, target));
    if (::mkdir(target.c_str(), 0755) == 0) {
      MOAT_TRY(record_placeholder(workspace, target, created));
    } else if (errno == EROFS) {
      return {};  // an enclosing protected path is already a read-only mask: it covers this one
    } else if (errno != EEXIST) {  // EEXIST: made by someone else meanwhile, not ours to remove
      return fail(Error::from_errno("mkdir", errno, target));
    }
    return bind_read_only(target, target);
  }
  if (S_ISLNK(st.st_mode)) return bind_read_only(kEmptyFile, target);
  return bind_read_only(target, target);
}

// This runs before every call, so the walk goes no deeper than the pattern can match: without
// "**", FNM_PATHNAME keeps each wildcard inside one component, so "*.pem" is one readdir of the
// workspace, not a walk of the whole tree.
void glob_targets(const std::string& workspace, const std::string& pattern,
                  std::vector<std::string>& out) {
  namespace fs = std::filesystem;
  const bool any_depth = pattern.find("**") != std::string::npos;
  const int flags = any_depth ? 0 : FNM_PATHNAME;
  const auto components = static_cast<int>(std::count(pattern.begin(), pattern.end(), '/')) + 1;
  std::error_code ec;
  fs::recursive_directory_iterator it(workspace, fs::directory_options::none, ec), end;
  std::size_t seen = 0;
  for (; !ec && it != end && seen < kMaxGlobEntries; it.increment(ec), ++seen) {
    std::string rel = it->path().string().substr(workspace.size() + 1);
    if (fnmatch(pattern.c_str(), rel.c_str(), flags) == 0) {
      out.push_back(it->path().string());
      if (it->is_directory(ec)) it.disable_recursion_pending();
    } else if (!any_depth && it.depth() + 1 >= components) {
      it.disable_recursion_pending();  // what lies below has more components than the pattern
    }
  }
}

Result<void> hide_one(const std::string& workspace, const std::string& target) {
  struct stat st;
  if (::lstat(target.c_str(), &st) != 0) return {};  // missing: nothing to hide
  MOAT_TRY(pin_ancestors(workspace, target));
  if (is_mount_point(target)) return {};  // hidden by an earlier call
  return bind_read_only(S_ISDIR(st.st_mode) ? kEmptyDir : kEmptyFile, target);
}

std::vector<std::string> targets_of(const std::string& workspace, const std::string& pattern) {
  std::vector<std::string> targets;
  if (is_glob(pattern)) {
    glob_targets(workspace, pattern, targets);
  } else if (pattern.find("..") == std::string::npos) {
    targets.push_back(workspace + "/" + pattern);
  }
  return targets;
}

}  // namespace

Result<void> hide_paths(const std::string& workspace, const std::vector<std::string>& patterns) {
  for (const std::string& p : patterns)
    for (const auto& t : targets_of(workspace, p)) MOAT_TRY(hide_one(workspace, t));
  return {};
}

Result<std::string> mask_target(const std::string& workspace, const std::string& relative) {
  std::string cur = workspace;
  std::size_t pos = 0;
  while (pos < relative.size()) {
    std::size_t next = relative.find('/', pos);
    if (next == std::string::npos) next = relative.size();
    std::string comp = relative.substr(pos, next - pos);
    pos = next + 1;
    if (comp.empty() || comp == ".") continue;
    if (comp == "..") return fail(Error::from_errno("protected path", EINVAL, relative));
    cur += "/" + comp;
    struct stat st;
    if (::lstat(cur.c_str(), &st) != 0) return cur;   // first missing component
    if (S_ISLNK(st.st_mode)) return cur;              // the link itself
    if (!S_ISDIR(st.st_mode)) return cur;             // a file in the middle: cover it
  }
  return cur;
}

Result<void> mask_protected_paths(const std::string& workspace,
                                  const std::vector<std::string>& patterns,
                                  std::vector<Placeholder>* created) {
  for (const std::string& p : patterns) {
    std::vector<std::string> targets;
    if (is_glob(p)) {
      glob_targets(workspace, p, targets);
    } else {
      MOAT_ASSIGN_OR_RETURN(std::string t, mask_target(workspace, p));
      targets.push_back(std::move(t));
    }
    for (const auto& t : targets) MOAT_TRY(mask_one(workspace, t, created));
  }
  return {};
}

Result<void> remove_placeholders(const std::string& workspace,
                                 std::vector<Placeholder> placeholders) {
  // Deepest first, so a placeholder inside another one is gone before its parent is tried.
  std::sort(placeholders.begin(), placeholders.end(),
            [](const Placeholder& a, const Placeholder& b) { return a.relative > b.relative; });
  MOAT_ASSIGN_OR_RETURN(UniqueFd root, sys::open_path(workspace, O_PATH | O_DIRECTORY));
  Result<void> first = {};
  for (const Placeholder& p : placeholders) {
    const std::size_t slash = p.relative.rfind('/');
    const std::string parent_rel = slash == std::string::npos ? "." : p.relative.substr(0, slash);
    const std::string name = p.relative.substr(slash == std::string::npos ? 0 : slash + 1);
    // Beneath the workspace, no symlinks: a path swapped for a link cannot send us elsewhere.
    auto parent = sys::open_beneath(root.get(), parent_rel, O_PATH | O_DIRECTORY, true);
    if (!parent) continue;  // its parent is gone or replaced: so is the placeholder
    struct stat st;
    if (::fstatat(parent->get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (!S_ISDIR(st.st_mode) || st.st_dev != p.dev || st.st_ino != p.ino) continue;  // not ours
    // rmdir removes only an empty directory: what someone put in it keeps it.
    if (::unlinkat(parent->get(), name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOTEMPTY &&
        errno != EEXIST && errno != ENOENT && first)
      first = fail(Error::from_errno("rmdir", errno, workspace + "/" + p.relative));
  }
  return first;
}

}  // namespace moat::sandbox
