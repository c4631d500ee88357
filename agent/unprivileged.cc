// agent/unprivileged.cc: identity switch, capability drop, no_new_privs and the loop's filter.
#include "agent/unprivileged.h"

#include <grp.h>
#include <linux/securebits.h>
#include <sched.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <dirent.h>
#include <unistd.h>

#include <seccomp.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <span>

#include "sandbox/landlock.h"
#include "sandbox/seccomp_sets.h"

namespace moat::agent {
namespace {

// Every namespace flag clone(2) and unshare(2) take: a new user namespace hands its
// creator CAP_SYS_ADMIN inside it, which is the first step of most namespace escapes.
constexpr unsigned long kNamespaceFlags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID |
                                          CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS |
                                          CLONE_NEWCGROUP | CLONE_NEWTIME;

Result<void> switch_identity(const DropOptions& o) {
  if (::geteuid() != 0) return {};
  // Groups first: after setuid we could no longer drop root's supplementary groups.
  if (::setgroups(0, nullptr) != 0) return fail(Error::from_errno("setgroups", errno, "0"));
  if (::setresgid(o.gid, o.gid, o.gid) != 0)
    return fail(Error::from_errno("setresgid", errno, std::to_string(o.gid)));
  if (::setresuid(o.uid, o.uid, o.uid) != 0)
    return fail(Error::from_errno("setresuid", errno, std::to_string(o.uid)));
  // A switch that can be undone was no switch at all.
  if (::setuid(0) == 0) return fail(std::string("setuid(0) succeeded after dropping root"));
  return {};
}

Result<void> drop_bounding_set() {
  // Needs CAP_SETPCAP, which only root still has: for anyone else the set is already
  // useless (no_new_privs below blocks setuid binaries), so EPERM is not an error.
  for (int cap = 0; cap <= CAP_LAST_CAP; ++cap) {
    if (::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno != EINVAL && errno != EPERM)
      return fail(Error::from_errno("prctl(PR_CAPBSET_DROP)", errno, std::to_string(cap)));
  }
  return {};
}

Result<void> drop_capabilities() {
  if (::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL)
    return fail(Error::from_errno("prctl(PR_CAP_AMBIENT_CLEAR_ALL)", errno));
  std::unique_ptr<_cap_struct, int (*)(void*)> caps(cap_init(), cap_free);
  if (!caps) return fail(Error::from_errno("cap_init", errno));
  if (cap_set_proc(caps.get()) != 0) return fail(Error::from_errno("cap_set_proc", errno));
  // Refuse to continue if anything is left: a capability we failed to drop is a hole.
  std::unique_ptr<_cap_struct, int (*)(void*)> now(cap_get_proc(), cap_free);
  std::unique_ptr<_cap_struct, int (*)(void*)> none(cap_init(), cap_free);
  if (!now || !none || cap_compare(now.get(), none.get()) != 0)
    return fail(std::string("capabilities remain after dropping them"));
  return {};
}

Result<std::size_t> count_threads() {
  DIR* d = ::opendir("/proc/self/task");
  if (d == nullptr) return fail(Error::from_errno("opendir", errno, "/proc/self/task"));
  std::size_t n = 0;
  while (const dirent* e = ::readdir(d))
    if (e->d_name[0] != '.') ++n;
  ::closedir(d);
  return n;
}

// The sandbox's deny sets (sandbox/seccomp_sets.cc) the loop shares, with their errnos:
// the filesystem view and namespaces are fixed for this process, and it never reaches into
// another process's memory.
constexpr const char* kLoopDenySets[] = {"namespace_change", "other_processes"};

// Beyond those sets, EPERM: the loop talks to the model and to moatd; running programs is
// moatd's job alone. unshare is denied whole (the sandbox only checks its namespace flags).
constexpr const char* kLoopOnlyDenies[] = {"execve", "execveat", "unshare"};

// The sandbox's named exceptions the loop shares: clone3 (ENOSYS, so glibc falls back to
// clone(2), whose flags are checked below). Not openat2: moat's own path opening uses it.
constexpr const char* kLoopExceptions[] = {"clone3"};

bool is_one_of(const char* name, std::span<const char* const> names) {
  return std::any_of(names.begin(), names.end(),
                     [&](const char* n) { return std::strcmp(n, name) == 0; });
}

Result<void> deny_by_name(scmp_filter_ctx ctx, const char* name, int err) {
  const int nr = seccomp_syscall_resolve_name(name);
  if (nr == __NR_SCMP_ERROR)
    return fail(Error::from_errno("seccomp_syscall_resolve_name", ENOENT, name));
  if (int rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(err), nr, 0); rc != 0)
    return fail(Error::from_errno("seccomp_rule_add", -rc, name));
  return {};
}

Result<void> add_loop_denies(scmp_filter_ctx ctx) {
  for (const sandbox::SyscallSet& set : sandbox::syscall_sets())
    if (is_one_of(set.name, kLoopDenySets))
      for (const sandbox::SyscallEntry& e : set.entries)
        MOAT_TRY(deny_by_name(ctx, e.name, set.errno_value));
  for (const char* name : kLoopOnlyDenies) MOAT_TRY(deny_by_name(ctx, name, EPERM));
  for (const sandbox::NamedException& e : sandbox::named_exceptions())
    if (is_one_of(e.name, kLoopExceptions)) MOAT_TRY(deny_by_name(ctx, e.name, e.errno_value));
  return {};
}

}  // namespace

Result<void> install_loop_filter() {
  std::unique_ptr<void, void (*)(scmp_filter_ctx)> ctx(seccomp_init(SCMP_ACT_ALLOW),
                                                       seccomp_release);
  if (!ctx) return fail(std::string("seccomp_init failed"));
  MOAT_TRY(add_loop_denies(ctx.get()));
  // One rule per flag: a masked compare tests "this bit is set", and rules with the same
  // action are ORed, so any namespace flag in clone's flags fails with EPERM.
  for (unsigned long flag = 1; flag != 0; flag <<= 1) {
    if ((kNamespaceFlags & flag) == 0) continue;
    if (int rc = seccomp_rule_add(ctx.get(), SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
                                  SCMP_A0(SCMP_CMP_MASKED_EQ, flag, flag));
        rc != 0)
      return fail(Error::from_errno("seccomp_rule_add(clone)", -rc));
  }
  if (int rc = seccomp_load(ctx.get()); rc != 0)
    return fail(Error::from_errno("seccomp_load", -rc));
  return {};
}

Result<void> drop_to_unprivileged_loop(const DropOptions& options) {
  // Capabilities, the bounding set, no_new_privs and the seccomp filter are per thread: a
  // thread started before this point would keep all of them. Refuse rather than leave one.
  MOAT_ASSIGN_OR_RETURN(const std::size_t threads, count_threads());
  if (threads != 1)
    return fail(Error::msg("the loop process has " + std::to_string(threads) +
                           " threads; it must drop privileges while it has one (each thread keeps "
                           "its own capabilities and seccomp filter)"));
  MOAT_TRY(drop_bounding_set());  // first: only root may, and root is about to be gone
  MOAT_TRY(switch_identity(options));
  MOAT_TRY(drop_capabilities());
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
    return fail(Error::from_errno("prctl(PR_SET_NO_NEW_PRIVS)", errno));
  // The filter refuses ptrace and process_vm_writev, but /proc/<pid>/mem is a file: without
  // a domain the loop could write into any dumpable process of its uid (the user's shell; as
  // root, the sandbox's processes, whose host uid it shares). Without Landlock it can
  // (docs/security.md).
  if (auto domain = sandbox::enter_ptrace_scoped_domain();
      !domain && domain.error().code != EOPNOTSUPP)
    return fail(domain.error());
  MOAT_TRY(install_loop_filter());
  return {};
}

}  // namespace moat::agent
