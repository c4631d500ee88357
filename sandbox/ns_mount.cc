// sandbox/ns_mount.cc: the session's filesystem view (see ns_mount.h). Parse -> plan ->
// execute (bwrap's SetupOp): the plan is a list of mount operations sorted by depth, so a
// parent mount never hides a child mounted before it.
#include "sandbox/ns_mount.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <iterator>

#include "base/sys.h"
#include "base/unique_fd.h"
#include "sandbox/sys.h"

namespace moat::sandbox {
namespace {

// The staging mount point of the new root. Any host directory works: every source tree is
// cloned (open_tree) before the staging tmpfs covers it, and the mount namespace is private.
constexpr const char* kStage = "/tmp";

enum class OpKind { kTree, kTmpfs, kProc, kDevpts, kSymlink, kFile, kDir, kSelfReadOnly };

struct Op {
  OpKind kind;
  std::string target;  // sandbox path
  UniqueFd tree;       // kTree: the detached tree to attach
  std::string data;    // kTmpfs: options; kSymlink: link text; kFile: contents
  bool is_dir = true;  // kTree: whether the mount point is a directory
  int order = 0;       // ties keep insertion order; lower runs first
};

int depth(const std::string& p) {
  return static_cast<int>(std::count(p.begin(), p.end(), '/')) - (p == "/" ? 1 : 0);
}

// Creates path by make() and, only when a parent is missing (ENOENT), makes the parents and
// tries again: in a view most parents exist already, so most files and links cost no mkdir.
template <typename Make>
auto with_parents(const std::string& path, Make make) -> decltype(make()) {
  auto made = make();
  if (made || made.error().code != ENOENT) return made;
  MOAT_TRY(sys::make_dirs(path.substr(0, path.rfind('/')), 0755));
  return make();
}

Result<void> touch(const std::string& path) {
  return with_parents(path, [&]() -> Result<void> {
    MOAT_ASSIGN_OR_RETURN(UniqueFd fd, sys::open_path(path, O_WRONLY | O_CREAT, 0644));
    return {};
  });
}

Result<void> make_symlink(const std::string& text, const std::string& path,
                          const std::string& name) {
  return with_parents(path, [&]() -> Result<void> {
    if (::symlink(text.c_str(), path.c_str()) != 0 && errno != EEXIST)
      return fail(Error::from_errno("symlink", errno, name));
    return {};
  });
}

Result<void> set_attrs(int tree, std::uint64_t set, bool recursive) {
  mount_attr attr{};
  attr.attr_set = set;
  unsigned flags = AT_EMPTY_PATH | (recursive ? AT_RECURSIVE : 0);
  if (mount_setattr(tree, "", flags, &attr, sizeof attr) != 0)
    return fail(Error::from_errno("mount_setattr", errno));
  return {};
}

Result<void> attach(int tree, const std::string& target) {
  if (move_mount(tree, "", AT_FDCWD, target.c_str(), MOVE_MOUNT_F_EMPTY_PATH) != 0)
    return fail(Error::from_errno("move_mount", errno, target));
  return {};
}

// A read-only clone of a host path, or a symlink op when the path is a symlink (merged-/usr
// systems have /bin -> usr/bin: binding would follow it, recreating the link keeps it a link).
Result<void> plan_read_only(const std::string& host, std::vector<Op>& ops) {
  struct stat st;
  if (::lstat(host.c_str(), &st) != 0) return {};  // missing: nothing to show
  if (S_ISLNK(st.st_mode)) {
    char buf[4096];
    ssize_t n = ::readlink(host.c_str(), buf, sizeof buf - 1);
    if (n < 0) return fail(Error::from_errno("readlink", errno, host));
    ops.push_back({OpKind::kSymlink, host, {}, std::string(buf, static_cast<std::size_t>(n))});
    return {};
  }
  MOAT_ASSIGN_OR_RETURN(UniqueFd tree, sys::clone_tree(host, true));
  MOAT_TRY(set_attrs(tree.get(), MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, true));
  Op op{OpKind::kTree, host, std::move(tree), {}};
  op.is_dir = S_ISDIR(st.st_mode);
  ops.push_back(std::move(op));
  return {};
}

// The tree moatd or the keeper cloned from the workspace fd: the path is only where it goes.
Result<void> plan_workspace(const MountPlan& plan, std::vector<Op>& ops) {
  MOAT_ASSIGN_OR_RETURN(UniqueFd tree, sys::duplicate(plan.workspace_tree));
  // nosuid/nodev: a setuid binary or device node written by the code must not gain power.
  MOAT_TRY(set_attrs(tree.get(), MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, true));
  ops.push_back({OpKind::kTree, plan.workspace, std::move(tree), {}, true, 1});
  return {};
}

// The tree a bind attaches: moatd's clone, or (rootless) a clone of what the source path names
// in this namespace, only when that is the file moatd checked: a symlink or another file put
// there since fails the session closed.
Result<UniqueFd> bind_tree(const BindPlan& b) {
  if (b.tree) return sys::duplicate(b.fd);
  auto again = sys::open_no_symlinks(b.source, O_PATH);
  if (!again) return fail(again.error().with_context("bind " + b.source));
  struct stat checked {};
  struct stat now {};
  if (::fstat(b.fd, &checked) != 0 || ::fstat(again->get(), &now) != 0)
    return fail(Error::from_errno("fstat", errno, b.source));
  if (checked.st_dev != now.st_dev || checked.st_ino != now.st_ino)
    return fail(Error{EAGAIN, "bind " + b.source + ": it was replaced after it was checked"});
  return sys::clone_tree_at(again->get(), "", true);
}

Result<void> plan_binds(const MountPlan& plan, std::vector<Op>& ops) {
  for (const BindPlan& b : plan.binds) {
    MOAT_ASSIGN_OR_RETURN(UniqueFd tree, bind_tree(b));
    // nosuid/nodev as for the workspace; read-only unless --bind.
    const std::uint64_t attrs =
        MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | (b.writable ? 0 : MOUNT_ATTR_RDONLY);
    MOAT_TRY(set_attrs(tree.get(), attrs, true));
    Op op{OpKind::kTree, b.target, std::move(tree), {}, b.is_dir, 2};
    ops.push_back(std::move(op));
  }
  return {};
}

// /dev: only harmless character devices, bound from the host (a user namespace may not mknod).
Result<void> plan_dev(std::vector<Op>& ops) {
  ops.push_back({OpKind::kTmpfs, "/dev", {}, "mode=0755,size=65536"});
  for (const char* dev : {"null", "zero", "full", "random", "urandom", "tty"}) {
    std::string host = std::string("/dev/") + dev;
    MOAT_ASSIGN_OR_RETURN(UniqueFd tree, sys::clone_tree(host, false));
    MOAT_TRY(set_attrs(tree.get(), MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC, false));
    Op op{OpKind::kTree, host, std::move(tree), {}};
    op.is_dir = false;
    ops.push_back(std::move(op));
  }
  ops.push_back({OpKind::kDevpts, "/dev/pts", {}, {}});
  ops.push_back({OpKind::kSymlink, "/dev/ptmx", {}, "pts/ptmx"});
  ops.push_back({OpKind::kTmpfs, "/dev/shm", {}, "mode=1777,size=67108864"});
  ops.push_back({OpKind::kSymlink, "/dev/fd", {}, "/proc/self/fd"});
  ops.push_back({OpKind::kSymlink, "/dev/stdin", {}, "/proc/self/fd/0"});
  ops.push_back({OpKind::kSymlink, "/dev/stdout", {}, "/proc/self/fd/1"});
  ops.push_back({OpKind::kSymlink, "/dev/stderr", {}, "/proc/self/fd/2"});
  return {};
}

// /proc of the new pid namespace. It must be mounted while the old root is still attached:
// the kernel lets a user namespace mount proc only if a fully visible proc exists in the
// mount namespace (mount_too_revealing). Knobs that act on the host are made read-only, and
// so is the whole mount: a writable /proc/<pid>/mem would let one sandboxed process rewrite
// another's memory (an exec's argv, after the exec watch read it); EROFS on every write open.
void plan_proc(std::vector<Op>& ops) {
  ops.push_back({OpKind::kProc, "/proc", {}, {}});
  for (const char* p : {"/proc/sysrq-trigger", "/proc/sys", "/proc/irq", "/proc/bus"})
    ops.push_back({OpKind::kSelfReadOnly, p, {}, {}, true, 1});
}

// The targets of the view that do not depend on the workspace (plan_system), besides the
// read-only paths: a view staged ahead takes a workspace or bind at none of them or above.
constexpr const char* kSystemTargets[] = {"/tmp", "/dev", "/proc", "/run", "/etc/hostname"};

bool is_at_or_under(const std::string& path, const std::string& dir) {
  return path == dir || path.rfind(dir + "/", 0) == 0 || dir == "/";
}

// Everything of the view but the workspace and the binds: the read-only system paths, /tmp,
// /dev, /proc, /run and the hostname. With the workspace known, a read-only path inside it is
// ordered after it.
Result<void> plan_system(const MountPlan& plan, std::vector<Op>& ops) {
  for (const auto& p : plan.read_only) MOAT_TRY(plan_read_only(p, ops));
  // A read-only path inside the workspace must be mounted after the workspace covers it.
  for (Op& op : ops)
    if (!plan.workspace.empty() && op.target.rfind(plan.workspace + "/", 0) == 0) op.order = 2;
  ops.push_back({OpKind::kTmpfs, "/tmp", {}, "mode=1777,size=" + std::to_string(plan.tmp_size)});
  MOAT_TRY(plan_dev(ops));
  plan_proc(ops);
  // /etc/hostname would otherwise name the host: the session's hostname replaces it.
  ops.push_back({OpKind::kTmpfs, "/run", {}, "mode=0755,size=65536"});
  ops.push_back({OpKind::kFile, "/run/moat/hostname", {}, plan.hostname + "\n"});
  // Mask sources: for protected symlinks, and for hidden files and directories (protect.h).
  ops.push_back({OpKind::kFile, "/run/moat/empty", {}, ""});
  ops.push_back({OpKind::kDir, "/run/moat/empty.d", {}, ""});
  ops.push_back({OpKind::kSelfReadOnly, "/etc/hostname", {}, "/run/moat/hostname", false, 2});
  return {};
}

void sort_ops(std::vector<Op>& ops) {
  std::stable_sort(ops.begin(), ops.end(), [](const Op& a, const Op& b) {
    if (depth(a.target) != depth(b.target)) return depth(a.target) < depth(b.target);
    return a.order < b.order;
  });
  // Order after depth: /proc's read-only covers need proc mounted, and the hostname file
  // needs /run and /etc; keep dependants after what they depend on.
  std::stable_sort(ops.begin(), ops.end(),
                   [](const Op& a, const Op& b) { return a.order < b.order; });
}

Result<void> run_self_read_only(const std::string& root, const Op& op) {
  std::string target = root + op.target;
  std::string source = op.data.empty() ? target : root + op.data;
  struct stat st;
  if (::lstat(target.c_str(), &st) != 0) return {};  // not on this kernel/view: nothing to cover
  MOAT_ASSIGN_OR_RETURN(UniqueFd tree, sys::clone_tree(source, true));
  MOAT_TRY(set_attrs(tree.get(), MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, true));
  return attach(tree.get(), target);
}

Result<void> run_op(const std::string& root, Op& op) {
  std::string target = root + op.target;
  switch (op.kind) {
    case OpKind::kTree:
      if (op.is_dir) {
        MOAT_TRY(sys::make_dirs(target, 0755));
      } else {
        MOAT_TRY(touch(target));
      }
      return attach(op.tree.get(), target);
    case OpKind::kTmpfs:
      MOAT_TRY(sys::make_dirs(target, 0755));
      if (::mount("tmpfs", target.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, op.data.c_str()) != 0)
        return fail(Error::from_errno("mount tmpfs", errno, op.target));
      return {};
    case OpKind::kProc:
      MOAT_TRY(sys::make_dirs(target, 0555));
      if (::mount("proc", target.c_str(), "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY,
                  nullptr) != 0)
        return fail(Error::from_errno("mount proc", errno, op.target));
      return {};
    case OpKind::kDevpts:
      MOAT_TRY(sys::make_dirs(target, 0755));
      if (::mount("devpts", target.c_str(), "devpts", MS_NOSUID | MS_NOEXEC,
                  "newinstance,ptmxmode=0666,mode=0620") != 0)
        return fail(Error::from_errno("mount devpts", errno, op.target));
      return {};
    case OpKind::kSymlink: return make_symlink(op.data, target, op.target);
    case OpKind::kFile: {
      MOAT_ASSIGN_OR_RETURN(UniqueFd fd, with_parents(target, [&] {
                              return sys::open_path(target, O_WRONLY | O_CREAT | O_TRUNC, 0644);
                            }));
      return sys::write_all(fd.get(), op.data.data(), op.data.size());
    }
    case OpKind::kDir: return sys::make_dirs(target, 0555);
    case OpKind::kSelfReadOnly: return run_self_read_only(root, op);
  }
  return {};
}

// pivot_root(".", "."): the old root ends up stacked under the new one and is detached at
// once, so nothing of the host remains reachable (pivot_root(2), "NOTES").
Result<void> pivot_into(const std::string& root) {
  if (::chdir(root.c_str()) != 0) return fail(Error::from_errno("chdir", errno, root));
  if (syscall(SYS_pivot_root, ".", ".") != 0) return fail(Error::from_errno("pivot_root", errno));
  if (::umount2(".", MNT_DETACH) != 0) return fail(Error::from_errno("umount2", errno, "old root"));
  if (::chdir("/") != 0) return fail(Error::from_errno("chdir", errno, "/"));
  // The root itself is read-only: code may not add top-level directories.
  if (::mount(nullptr, "/", nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV,
              nullptr) != 0)
    return fail(Error::from_errno("remount", errno, "/ read-only"));
  // /dev's own tmpfs holds only mount points: no file may be added there. The devices are
  // separate bind mounts and stay writable, as do /dev/shm and /dev/pts.
  if (::mount(nullptr, "/dev", nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NOEXEC,
              nullptr) != 0)
    return fail(Error::from_errno("remount", errno, "/dev read-only"));
  if (::mount(nullptr, "/run", nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV,
              nullptr) != 0)
    return fail(Error::from_errno("remount", errno, "/run read-only"));
  return {};
}

}  // namespace

const std::vector<std::string>& default_read_only_paths() {
  static const std::vector<std::string> kPaths = {"/usr",   "/bin",   "/sbin",   "/lib",
                                                  "/lib64", "/lib32", "/libx32", "/etc"};
  return kPaths;
}

Result<void> build_view_in_init(const MountPlan& plan) {
  // Nothing we mount may propagate back to the host's mount namespace.
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
    return fail(Error::from_errno("mount", errno, "/ private"));
  std::vector<Op> ops;
  // Every source is cloned before the stage covers anything.
  MOAT_TRY(plan_system(plan, ops));
  MOAT_TRY(plan_workspace(plan, ops));
  MOAT_TRY(plan_binds(plan, ops));
  sort_ops(ops);
  if (::mount("tmpfs", kStage, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1048576") != 0)
    return fail(Error::from_errno("mount tmpfs", errno, "new root"));
  for (Op& op : ops) MOAT_TRY(run_op(kStage, op));
  return pivot_into(kStage);
}

bool fits_staged_view(const std::vector<std::string>& read_only,
                      const std::vector<std::string>& targets) {
  std::vector<std::string> staged = read_only.empty() ? default_read_only_paths() : read_only;
  staged.insert(staged.end(), std::begin(kSystemTargets), std::end(kSystemTargets));
  for (const std::string& target : targets)
    for (const std::string& s : staged)
      if (!target.empty() && is_at_or_under(s, target)) return false;
  return true;
}

std::string read_only_paths_stamp(const std::vector<std::string>& read_only) {
  std::string out;
  for (const std::string& p : read_only.empty() ? default_read_only_paths() : read_only) {
    struct stat st;
    out += p + '\0';
    if (::lstat(p.c_str(), &st) != 0) {
      out += "absent\n";
      continue;
    }
    out += std::to_string(st.st_mode & S_IFMT) + ':' + std::to_string(st.st_dev) + ':' +
           std::to_string(st.st_ino);
    char buf[4096];
    const ssize_t n = S_ISLNK(st.st_mode) ? ::readlink(p.c_str(), buf, sizeof buf) : 0;
    out += ':' + std::string(buf, static_cast<std::size_t>(std::max<ssize_t>(n, 0))) + '\n';
  }
  return out;
}

Result<UniqueFd> watch_mount_table() {
  return sys::open_path("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
}

bool mount_table_changed(int watch) {
  pollfd p{watch, POLLPRI, 0};
  return watch < 0 || ::poll(&p, 1, 0) != 0;
}

Result<void> stage_view_in_init(const MountPlan& plan) {
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
    return fail(Error::from_errno("mount", errno, "/ private"));
  std::vector<Op> ops;
  MountPlan system = plan;
  system.workspace.clear();  // not known yet
  MOAT_TRY(plan_system(system, ops));
  sort_ops(ops);
  if (::mount("tmpfs", kStage, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1048576") != 0)
    return fail(Error::from_errno("mount tmpfs", errno, "new root"));
  for (Op& op : ops) MOAT_TRY(run_op(kStage, op));
  return {};
}

Result<void> finish_view_in_init(const MountPlan& plan) {
  std::vector<std::string> targets = {plan.workspace};
  for (const BindPlan& b : plan.binds) {
    // A source path would be opened again here, where the stage covers /tmp: only trees.
    if (!b.tree) return fail("bind " + b.source + ": a view built ahead takes only moatd's trees");
    targets.push_back(b.target);
  }
  if (plan.workspace_tree < 0) return fail("workspace: a view built ahead takes only moatd's tree");
  if (!fits_staged_view(plan.read_only, targets))
    return fail("workspace " + plan.workspace +
                ": a system path of the view built ahead lies at or under it or a bind");
  std::vector<Op> ops;
  MOAT_TRY(plan_workspace(plan, ops));
  MOAT_TRY(plan_binds(plan, ops));
  sort_ops(ops);
  for (Op& op : ops) MOAT_TRY(run_op(kStage, op));
  return pivot_into(kStage);
}

}  // namespace moat::sandbox
