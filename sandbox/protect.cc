// sandbox/protect.cc: masking protected workspace paths (see protect.h).
#include "sandbox/protect.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <set>
#include <unordered_map>

#include "base/glob.h"
#include "base/unique_fd.h"
#include "sandbox/sys.h"

namespace moat::sandbox {
namespace {

constexpr const char* kEmptyFile = "/run/moat/empty";
constexpr const char* kEmptyDir = "/run/moat/empty.d";

// Code a host tool runs from the workspace: whoever can write these runs code as the person
// who later types `git status`, opens the folder in an editor, or cd's into it with direnv.
// Each is protected at any depth: a nested repository, a vendored project or a submodule is
// as much a place where that person types `git status` as the workspace's top.
constexpr HostExecutedPath kHostExecuted[] = {
    {"**/.git/config",
     "git: core.fsmonitor, core.pager, core.sshCommand, core.hooksPath, "
     "aliases, filter and diff drivers run commands"},
    {"**/.git/config.worktree", "git: as config (extensions.worktreeConfig)"},
    {"**/.git/hooks", "git: run by commit, merge, checkout, push"},
    {"**/.git/info",
     "git: info/attributes picks filter and diff drivers; info/exclude hides "
     "files from git status"},
    {"**/.git/commondir", "git: a linked worktree's pointer to the repository whose config runs"},
    {"**/.git/worktrees/*/commondir", "git: as commondir, for each linked worktree"},
    {"**/.git/worktrees/*/config.worktree", "git: as config, for each linked worktree"},
    {"**/.git/modules/**/config", "git: a submodule's config (its repository lives here)"},
    {"**/.git/modules/**/hooks", "git: a submodule's hooks"},
    {"**/.git/modules/**/info", "git: a submodule's info/attributes"},
    {"**/.git",
     "git: a gitlink file (submodule, linked worktree) names the repository git "
     "uses there; only a .git that is not a directory matches (see protect.h)"},
    {"**/.envrc",
     "direnv: runs it on cd once allowed; an allowed .envrc is re-allowed by "
     "people who do not re-read it"},
    {"**/.vscode/tasks.json", "VS Code: tasks with runOn folderOpen run when the folder opens"},
    {"**/.vscode/settings.json",
     "VS Code: settings name interpreters, shells and tool paths "
     "that the editor and its extensions run"},
    {"**/.vscode/launch.json", "VS Code: launch configurations run programs and pre-launch tasks"},
    {"**/.idea",
     "JetBrains IDEs: run configurations, startup tasks, external tools, file "
     "watchers"},
    {"**/.devcontainer", "Dev Containers: initializeCommand runs on the host"},
    {"**/.devcontainer.json", "Dev Containers: as .devcontainer"},
};

// A pattern whose last component is ".git" matches gitlink files only: a .git directory is
// written by every commit, so it is never masked whole (its config, hooks and info are).
bool is_gitlink_pattern(const std::string& glob) {
  return glob == ".git" || (glob.size() > 5 && glob.compare(glob.size() - 5, 5, "/.git") == 0);
}

Result<std::uint64_t> mount_id(const std::string& path) {
  struct statx st {};
  if (statx(AT_FDCWD, path.c_str(), AT_SYMLINK_NOFOLLOW, STATX_MNT_ID, &st) != 0)
    return fail(Error::from_errno("statx", errno, path));
  return static_cast<std::uint64_t>(st.stx_mnt_id);
}

bool is_read_only(const std::string& path) {
  struct statvfs st {};
  return ::statvfs(path.c_str(), &st) == 0 && (st.f_flag & ST_RDONLY) != 0;
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
  // Masked by an earlier call. A mount point that is still writable was only pinned as the
  // ancestor of a deeper protected path (~/.local/state/moat above its trust/): it needs its
  // own mask, or listing the deeper path first would leave the directory writable.
  if (is_mount_point(target) && is_read_only(target)) return {};
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

// The matches of a list of glob patterns in the workspace, found by one walk. This runs
// before every call, so the walk goes no deeper than a pattern can match: without "**",
// FNM_PATHNAME keeps each wildcard inside one component, so "*.pem" is one readdir of the
// workspace, not a walk of the whole tree; one "**" pattern makes it a walk of the tree.
struct GlobMatches {
  std::vector<std::string> targets;  // matched paths (a matched directory is not entered)
  // Directories the walk could not read: what they hold cannot be checked, so they are
  // covered as a whole. (Otherwise code could chmod 000 a directory in one call so that the
  // next call's walk skips it, and chmod it back in that call to reach what it holds.)
  std::vector<std::string> unreadable;
};

// Regular files with more than one name, seen by the walk, and per directory how many of its
// entries there are: enough to tell which files may have a name outside the workspace.
struct LinkScan {
  struct File {
    std::string rel;
    dev_t dev;
    ino_t ino;
    nlink_t nlink;
  };
  std::vector<File> files;
  std::unordered_map<std::string, std::size_t> entries;  // directory rel -> entries in it
  LinkCache* cache = nullptr;
};

bool same_time(const timespec& a, const timespec& b) {
  return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

// Records fd's regular file `name` if it has more than one name; true if it does.
bool scan_file(int dir_fd, const char* name, const std::string& rel, LinkScan* links) {
  struct stat st;
  if (::fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) ||
      st.st_nlink <= 1)
    return false;
  links->files.push_back({rel, st.st_dev, st.st_ino, st.st_nlink});
  return true;
}

// The cache entry of a directory just opened, and whether its files can be skipped.
LinkCache::Dir* cached_dir(LinkScan* links, int dir_fd, const std::string& rel, bool* fresh) {
  *fresh = false;
  struct stat st;
  if (links->cache == nullptr || ::fstat(dir_fd, &st) != 0) return nullptr;
  LinkCache::Dir& d = links->cache->dirs[rel];
  *fresh = d.settled && d.ino == st.st_ino && same_time(d.mtime, st.st_mtim) &&
           same_time(d.ctime, st.st_ctim);
  if (!*fresh) {
    timespec now{};
    clock_gettime(CLOCK_REALTIME, &now);
    d = LinkCache::Dir{st.st_ino,
                       st.st_mtim,
                       st.st_ctim,
                       now.tv_sec > st.st_mtim.tv_sec + 2 && now.tv_sec > st.st_ctim.tv_sec + 2,
                       {}};
  }
  return &d;
}

std::string parent_rel(const std::string& rel) {
  const std::size_t slash = rel.rfind('/');
  return slash == std::string::npos ? std::string() : rel.substr(0, slash);
}

// The files whose link count is higher than the names the walk found for them: some name is
// outside the workspace (a pnpm store, a hard-linked cache), or in a part the walk did not
// enter. A directory holding only such files (and such directories) is returned instead of
// its files, so a package tree of linked files costs one mount, not one per file. The
// workspace itself is never returned whole.
std::vector<std::string> linked_out(const LinkScan& scan) {
  std::map<std::pair<dev_t, ino_t>, nlink_t> names;
  for (const auto& f : scan.files) ++names[{f.dev, f.ino}];
  std::unordered_map<std::string, std::size_t> covered;  // dir -> entries that are linked out
  std::vector<std::string> files;
  for (const auto& f : scan.files) {
    if (names[{f.dev, f.ino}] >= f.nlink) continue;  // every name is inside the workspace
    files.push_back(f.rel);
    ++covered[parent_rel(f.rel)];
  }
  // Deepest directories first, so a directory is judged after everything below it.
  std::vector<std::string> dirs;
  for (const auto& [dir, n] : scan.entries)
    if (!dir.empty()) dirs.push_back(dir);
  std::sort(dirs.begin(), dirs.end(), [](const std::string& a, const std::string& b) {
    return std::count(a.begin(), a.end(), '/') > std::count(b.begin(), b.end(), '/');
  });
  std::set<std::string> whole;
  for (const auto& d : dirs) {
    const std::size_t n = scan.entries.at(d);
    if (n == 0 || covered[d] != n) continue;
    whole.insert(d);
    ++covered[parent_rel(d)];
  }
  std::vector<std::string> out;
  for (const auto& d : whole)
    if (whole.count(parent_rel(d)) == 0) out.push_back(d);
  for (const auto& f : files)
    if (whole.count(parent_rel(f)) == 0) out.push_back(f);
  return out;
}

// The walk's plan: the patterns that are globs, split once, and how deep the walk must go for
// them. They match as the policy's globs do (base/glob.h: "**" spans components, "*" never
// crosses a '/', a leading "**/" also matches at the top), so what the sandbox masks is what
// `moat policy explain` denies. Most patterns end in a literal name (".git/config",
// "**/.envrc"): an entry with another name cannot match, and comparing names is far cheaper
// than matching "**" for every entry of the workspace before every call.
struct GlobPlan {
  struct Glob {
    const std::string* pattern;
    std::string_view last;  // the last component when it holds no wildcard, else empty
    std::vector<std::string_view> parts;  // glob::split_path(*pattern)
  };
  std::vector<Glob> globs;
  bool any_depth = false;
  std::size_t max_components = 0;
};

GlobPlan plan_globs(const std::vector<std::string>& patterns) {
  GlobPlan plan;
  for (const auto& p : patterns) {
    if (!glob::has_glob_chars(p)) continue;
    const std::string_view last = std::string_view(p).substr(p.rfind('/') + 1);
    plan.globs.push_back(
        {&p, glob::has_glob_chars(last) ? std::string_view() : last, glob::split_path(p)});
    plan.any_depth |= p.find("**") != std::string::npos;
    plan.max_components = std::max<std::size_t>(
        plan.max_components, static_cast<std::size_t>(std::count(p.begin(), p.end(), '/')) + 1);
  }
  return plan;
}

bool matches_any(const GlobPlan& plan, std::string_view name, const std::string& rel, bool is_dir) {
  for (const GlobPlan::Glob& g : plan.globs) {
    if (!g.last.empty() && g.last != name) continue;
    if (is_dir && is_gitlink_pattern(*g.pattern)) continue;
    if (glob::path_matches_parts(g.parts, rel)) return true;
  }
  return false;
}

bool wants_deeper(const GlobPlan& plan, std::size_t depth) {
  // Below a directory at `depth` paths have depth + 2 components or more.
  return plan.any_depth || depth + 2 <= plan.max_components;
}

// The entry's type from d_type: one fstatat relative to the directory only when the file
// system does not fill it in.
bool is_directory(int dir_fd, const dirent* e) {
  if (e->d_type != DT_UNKNOWN) return e->d_type == DT_DIR;
  struct stat st;
  return ::fstatat(dir_fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
}

Error too_many_entries(std::size_t max_entries) {
  return Error{E2BIG, "protected paths: the workspace has more than " +
                          std::to_string(max_entries) +
                          " entries, so the paths matching the policy's globs cannot all be "
                          "found; the call is refused rather than run with some of them unmasked"};
}

// One pattern list of a walk (hidden, protected, protected if present): its plan, what the walk
// found for it, and how many entries it visited, each list bounded by max_entries on its own
// as when each had its own walk.
struct WalkPass {
  GlobPlan plan;
  LinkScan* links = nullptr;  // the hard-link check rides on this list's part of the walk
  std::size_t seen = 0;
  GlobMatches out;
};

// One walk for several pattern lists (Init::start_call's three ran three walks of the whole
// workspace before every call). Each directory carries the lists still looking below it: a
// list stops below its own match and past its depth, exactly where its own walk stopped. What
// the hidden list matches (`hidden`'s globs and `hidden_names`) is covered by an empty mount
// before the other lists are applied, so their walks saw an empty file or directory there:
// the merged walk does not look inside it or match it for them either.
struct Walk {
  const std::string& workspace;
  std::vector<WalkPass>& passes;
  const WalkPass* hidden = nullptr;
  std::vector<std::string_view> hidden_names;  // hidden paths that are no glob
  std::size_t max_entries;
};

struct WalkDir {
  std::string rel;  // "" for the workspace itself
  std::size_t depth;
  unsigned active;  // bit i: passes[i] walks this directory
};

bool is_hidden_name(const Walk& w, std::string_view rel) {
  return std::find(w.hidden_names.begin(), w.hidden_names.end(), rel) != w.hidden_names.end();
}

// The pass whose hard-link check covers this directory, if one does.
LinkScan* links_of(const Walk& w, unsigned active) {
  for (std::size_t i = 0; i < w.passes.size(); ++i)
    if ((active & (1u << i)) != 0 && w.passes[i].links != nullptr) return w.passes[i].links;
  return nullptr;
}

// Matches one entry against each pass walking its directory; the passes to go on below it.
unsigned match_entry(Walk& w, const dirent* e, const std::string& rel, bool is_dir,
                     unsigned active, std::size_t depth, bool* linked_scan) {
  const std::string_view name = e->d_name;
  unsigned below = 0;
  for (std::size_t i = 0; i < w.passes.size(); ++i) {
    if ((active & (1u << i)) == 0) continue;
    WalkPass& p = w.passes[i];
    if (matches_any(p.plan, name, rel, is_dir)) {
      p.out.targets.push_back(w.workspace + "/" + rel);
      if (&p == w.hidden) return 0;  // covered: the other passes see an empty mount
      continue;                      // the whole entry is covered for this pass
    }
    if (p.links != nullptr) *linked_scan = true;
    if (is_dir && wants_deeper(p.plan, depth)) below |= 1u << i;
  }
  return below;
}

Result<void> walk_one_dir(Walk& w, const WalkDir& dir, DIR* d, std::vector<WalkDir>& stack) {
  const int fd = dirfd(d);
  LinkScan* links = links_of(w, dir.active);
  bool fresh = false;
  LinkCache::Dir* cached = links != nullptr ? cached_dir(links, fd, dir.rel, &fresh) : nullptr;
  if (fresh)
    for (const auto& name : cached->multi)
      scan_file(fd, name.c_str(), dir.rel.empty() ? name : dir.rel + "/" + name, links);
  std::string rel = dir.rel.empty() ? std::string() : dir.rel + "/";  // reused per entry
  const std::size_t base = rel.size();
  std::size_t entries = 0;
  errno = 0;
  while (const dirent* e = ::readdir(d)) {
    const std::string_view name = e->d_name;
    if (name == "." || name == "..") continue;
    for (std::size_t i = 0; i < w.passes.size(); ++i)
      if ((dir.active & (1u << i)) != 0 && ++w.passes[i].seen > w.max_entries)
        return fail(too_many_entries(w.max_entries));
    ++entries;
    rel.resize(base);
    rel.append(name);
    if (!w.hidden_names.empty() && is_hidden_name(w, rel)) continue;  // an empty mount for all
    const bool is_dir = is_directory(fd, e);
    bool scan = false;
    const unsigned below = match_entry(w, e, rel, is_dir, dir.active, dir.depth, &scan);
    if (scan && !fresh && (e->d_type == DT_REG || e->d_type == DT_UNKNOWN) &&
        scan_file(fd, e->d_name, rel, links) && cached != nullptr)
      cached->multi.emplace_back(name);
    if (below != 0) stack.push_back({rel, dir.depth + 1, below});
    errno = 0;
  }
  if (errno != 0)
    for (std::size_t i = 0; i < w.passes.size(); ++i)
      if ((dir.active & (1u << i)) != 0)
        w.passes[i].out.unreadable.push_back(dir.rel.empty() ? w.workspace
                                                             : w.workspace + "/" + dir.rel);
  if (links != nullptr) links->entries[dir.rel] = entries;
  return {};
}

Result<void> walk(Walk& w) {
  unsigned active = 0;
  for (std::size_t i = 0; i < w.passes.size(); ++i)
    if (!w.passes[i].plan.globs.empty() || w.passes[i].links != nullptr) active |= 1u << i;
  if (active == 0) return {};
  std::vector<WalkDir> stack = {{"", 0, active}};
  while (!stack.empty()) {
    const WalkDir dir = std::move(stack.back());
    stack.pop_back();
    const std::string abs = dir.rel.empty() ? w.workspace : w.workspace + "/" + dir.rel;
    std::unique_ptr<DIR, int (*)(DIR*)> d(
        ::opendir(abs.c_str()), ::closedir);  // O_NOFOLLOW is implied: we never push links
    if (!d) {
      if (errno == ENOENT || errno == ENOTDIR) continue;  // gone or replaced meanwhile
      if (dir.rel.empty()) return fail(Error::from_errno("protected paths: opendir", errno, abs));
      for (std::size_t i = 0; i < w.passes.size(); ++i)
        if ((dir.active & (1u << i)) != 0) w.passes[i].out.unreadable.push_back(abs);
      continue;
    }
    MOAT_TRY(walk_one_dir(w, dir, d.get(), stack));
  }
  return {};
}

WalkPass pass_of(const std::vector<std::string>& patterns, LinkScan* links) {
  WalkPass p{plan_globs(patterns), links, 0, {}};
  if (links != nullptr) p.plan.any_depth = true;  // every file's link count is needed
  return p;
}

Result<void> hide_one(const std::string& workspace, const std::string& target) {
  struct stat st;
  if (::lstat(target.c_str(), &st) != 0) return {};  // missing: nothing to hide
  MOAT_TRY(pin_ancestors(workspace, target));
  if (is_mount_point(target)) return {};  // hidden by an earlier call
  return bind_read_only(S_ISDIR(st.st_mode) ? kEmptyDir : kEmptyFile, target);
}

Result<void> apply_hidden(const std::string& workspace, const std::vector<std::string>& patterns,
                          const GlobMatches& globbed) {
  for (const auto& t : globbed.targets) MOAT_TRY(hide_one(workspace, t));
  for (const auto& t : globbed.unreadable) MOAT_TRY(hide_one(workspace, t));
  for (const std::string& p : patterns)
    if (!glob::has_glob_chars(p) && p.find("..") == std::string::npos)
      MOAT_TRY(hide_one(workspace, workspace + "/" + p));
  return {};
}

// No pin_ancestors: what matters is the inode, and a read-only mount point cannot be
// renamed, removed or linked (EXDEV) from the sandbox; a renamed parent carries it along.
Result<void> apply_linked_out(const std::string& workspace, const LinkScan& scan) {
  for (const auto& t : linked_out(scan))
    if (!is_mount_point(workspace + "/" + t))
      MOAT_TRY(bind_read_only(workspace + "/" + t, workspace + "/" + t));
  return {};
}

Result<void> apply_protected(const std::string& workspace,
                             const std::vector<std::string>& patterns, const GlobMatches& globbed,
                             std::vector<Placeholder>* created, bool mask_missing) {
  for (const auto& t : globbed.targets) MOAT_TRY(mask_one(workspace, t, created));
  // Read-only, so the code cannot chmod it back open and write what the walk could not see.
  for (const auto& t : globbed.unreadable) MOAT_TRY(mask_one(workspace, t, created));
  for (const std::string& p : patterns) {
    if (glob::has_glob_chars(p)) continue;
    MOAT_ASSIGN_OR_RETURN(std::string t, mask_target(workspace, p));
    // A mask of a missing path would be a directory the host does not have (`test -e .env`
    // true inside, `git init` refused by an empty read-only .git).
    struct stat st;
    if (!mask_missing && ::lstat(t.c_str(), &st) != 0 && errno == ENOENT) continue;
    MOAT_TRY(mask_one(workspace, t, created));
  }
  return {};
}

}  // namespace

std::span<const HostExecutedPath> host_executed_paths() { return kHostExecuted; }

const HostExecutedPath* host_executed_match(std::string_view relative) {
  // The path, then each parent: "a/.idea/x.xml" is below the "**/.idea" row, and
  // "docs/.git/config" names the config row before the ".git" one.
  for (std::string prefix(relative); !prefix.empty();) {
    for (const HostExecutedPath& h : kHostExecuted)
      if (glob::path_matches(h.pattern, prefix)) return &h;
    const std::size_t slash = prefix.rfind('/');
    prefix.resize(slash == std::string::npos ? 0 : slash);
  }
  return nullptr;
}

Result<void> hide_paths(const std::string& workspace, const std::vector<std::string>& patterns,
                        std::size_t max_entries) {
  return protect_workspace(workspace, {&patterns, nullptr, nullptr, max_entries, nullptr}, nullptr);
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
    if (::lstat(cur.c_str(), &st) != 0) return cur;  // first missing component
    if (S_ISLNK(st.st_mode)) return cur;             // the link itself
    if (!S_ISDIR(st.st_mode)) return cur;            // a file in the middle: cover it
  }
  return cur;
}

std::vector<std::string> creation_watched_names(const std::vector<std::string>& patterns) {
  std::vector<std::string> out;
  for (const std::string& p : patterns)
    if (!glob::has_glob_chars(p) && p.find("..") == std::string::npos) out.push_back(p);
  for (const HostExecutedPath& h : kHostExecuted) {
    const std::string p = h.pattern;
    if (p.rfind("**/", 0) != 0 || glob::has_glob_chars(p.substr(3)) || is_gitlink_pattern(p))
      continue;
    // Only git's own files: a project's .envrc or .vscode/tasks.json is work the agent may be
    // asked to do; it is named at session end and held back by `batch --apply` instead.
    if (p.rfind("**/.git/", 0) != 0) continue;
    out.push_back(p.substr(3));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

Result<void> mask_protected_paths(const std::string& workspace,
                                  const std::vector<std::string>& patterns,
                                  std::vector<Placeholder>* created, std::size_t max_entries,
                                  LinkCache* linked_files, bool mask_missing) {
  const WorkspaceMasks masks{nullptr, mask_missing ? &patterns : nullptr,
                             mask_missing ? nullptr : &patterns, max_entries, linked_files};
  return protect_workspace(workspace, masks, created);
}

Result<void> protect_workspace(const std::string& workspace, const WorkspaceMasks& masks,
                               std::vector<Placeholder>* created) {
  static const std::vector<std::string> kNone;
  const auto& hidden = masks.hidden != nullptr ? *masks.hidden : kNone;
  const auto& protect = masks.protected_paths != nullptr ? *masks.protected_paths : kNone;
  const auto& if_present = masks.protected_if_present != nullptr ? *masks.protected_if_present
                                                                 : kNone;
  LinkScan scan;
  scan.cache = masks.linked_files;
  // The order of the lists is the order they are applied in: hidden first (see Walk).
  std::vector<WalkPass> passes;
  passes.push_back(pass_of(hidden, nullptr));
  passes.push_back(pass_of(protect, masks.linked_files != nullptr ? &scan : nullptr));
  passes.push_back(pass_of(if_present, nullptr));
  Walk w{workspace, passes, &passes[0], {}, masks.max_entries};
  for (const std::string& p : hidden)
    if (!glob::has_glob_chars(p) && p.find("..") == std::string::npos) w.hidden_names.push_back(p);
  MOAT_TRY(walk(w));
  MOAT_TRY(apply_hidden(workspace, hidden, passes[0].out));
  MOAT_TRY(apply_linked_out(workspace, scan));
  MOAT_TRY(apply_protected(workspace, protect, passes[1].out, created, true));
  return apply_protected(workspace, if_present, passes[2].out, created, false);
}

Result<void> remove_placeholders(const std::string& workspace,
                                 std::vector<Placeholder> placeholders) {
  MOAT_ASSIGN_OR_RETURN(UniqueFd root, sys::open_path(workspace, O_PATH | O_DIRECTORY));
  return remove_placeholders(root.get(), workspace, std::move(placeholders));
}

namespace {

// One placeholder, if it is still ours and empty (see remove_placeholders).
Result<void> remove_placeholder(int workspace_fd, const std::string& workspace,
                                const Placeholder& p) {
  const std::size_t slash = p.relative.rfind('/');
  const std::string parent_rel = slash == std::string::npos ? "." : p.relative.substr(0, slash);
  const std::string name = p.relative.substr(slash == std::string::npos ? 0 : slash + 1);
  // Beneath the workspace, no symlinks: a path swapped for a link cannot send us elsewhere.
  auto parent = sys::open_beneath(workspace_fd, parent_rel, O_PATH | O_DIRECTORY, true);
  if (!parent) return {};  // its parent is gone or replaced: so is the placeholder
  struct stat st;
  if (::fstatat(parent->get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return {};
  if (!S_ISDIR(st.st_mode) || st.st_dev != p.dev || st.st_ino != p.ino) return {};  // not ours
  // rmdir removes only an empty directory: what someone put in it keeps it.
  if (::unlinkat(parent->get(), name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOTEMPTY &&
      errno != EEXIST && errno != ENOENT)
    return fail(Error::from_errno("rmdir", errno, workspace + "/" + p.relative));
  return {};
}

constexpr std::size_t kParallelRemovals = 16;  // threads at once, at most

std::size_t depth_of(const Placeholder& p) {
  return static_cast<std::size_t>(std::count(p.relative.begin(), p.relative.end(), '/'));
}

}  // namespace

Result<void> remove_placeholders(int workspace_fd, const std::string& workspace,
                                 std::vector<Placeholder> placeholders) {
  // Deepest first, so a placeholder inside another one is gone before its parent is tried.
  std::sort(placeholders.begin(), placeholders.end(),
            [](const Placeholder& a, const Placeholder& b) { return depth_of(a) > depth_of(b); });
  Result<void> first = {};
  // Those of one depth are removed together: each was a mount point in the session's mount
  // namespace, and an rmdir that detaches a mount waits for an RCU grace period (a timer tick,
  // 4 ms here); one at a time, three placeholders cost 10 ms at every session's end.
  for (std::size_t begin = 0; begin < placeholders.size();) {
    std::size_t end = begin;
    while (end < placeholders.size() && end - begin < kParallelRemovals &&
           depth_of(placeholders[end]) == depth_of(placeholders[begin]))
      ++end;
    std::vector<std::future<Result<void>>> removals;
    for (std::size_t i = begin; i < end; ++i)
      removals.push_back(std::async(std::launch::async, remove_placeholder, workspace_fd,
                                    std::cref(workspace), std::cref(placeholders[i])));
    for (auto& r : removals)
      if (auto removed = r.get(); !removed && first) first = std::move(removed);
    begin = end;
  }
  return first;
}

}  // namespace moat::sandbox
