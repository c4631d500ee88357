// sandbox/seccomp_policy.cc: the ordered seccomp decisions (see seccomp_policy.h).
//
// Shape of the filter, first match wins:
//   1. any ABI but x86-64 (i386 via int 0x80, x32) -> kill the process: a second syscall
//      table would need a second policy, and nothing we run needs one.
//   2. argument-checked syscalls (clone, unshare, socket, socketpair, ioctl, personality,
//      the mode argument of open/chmod/mkdir/mknod: no setuid or setgid bits, and
//      fallocate's mode: none).
//   3. deny sets -> their errno (EPERM, or ENOSYS for the obsolete set); the named exceptions
//      (clone3, openat2) -> ENOSYS.
//   4. numbers below kFilterMaxSyscall that no set names -> ENOSYS.
//   5. everything else (the allow sets) -> allow.
// The default action is allow because libseccomp lets an unconditional rule override the
// conditional ones of the same syscall: "allow ioctl except TIOCSTI" is only expressible as
// a conditional deny over an allowing default. Step 4 keeps that default from admitting
// syscalls the table has never reviewed.
#include "sandbox/seccomp_policy.h"

#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <set>

#include "base/sys.h"
#include "sandbox/seccomp_sets.h"

namespace moat::sandbox {
namespace {

using FilterCtx = std::unique_ptr<void, void (*)(scmp_filter_ctx)>;

// CLONE_NEWTIME (0x80) is absent: in clone(2)'s first argument those bits are the exit signal.
constexpr unsigned long kNamespaceFlags[] = {CLONE_NEWNS,    CLONE_NEWUTS, CLONE_NEWIPC,
                                             CLONE_NEWUSER,  CLONE_NEWPID, CLONE_NEWNET,
                                             CLONE_NEWCGROUP};
constexpr unsigned long kCloneNewTime = 0x80;

Result<void> add(scmp_filter_ctx ctx, uint32_t action, int nr, unsigned count,
                 const scmp_arg_cmp* cmp, const char* what) {
  int rc = seccomp_rule_add_array(ctx, action, nr, count, cmp);
  if (rc != 0) return fail(Error::from_errno("seccomp_rule_add", -rc, what));
  return {};
}

Result<int> resolve(const char* name) {
  int nr = seccomp_syscall_resolve_name(name);
  if (nr == __NR_SCMP_ERROR)
    return fail(Error::from_errno("seccomp_syscall_resolve_name", ENOENT, name));
  return nr;
}

Result<void> add_namespace_flag_rules(scmp_filter_ctx ctx, int nr, bool with_newtime) {
  for (unsigned long flag : kNamespaceFlags) {
    scmp_arg_cmp cmp = SCMP_A0(SCMP_CMP_MASKED_EQ, flag, flag);
    MOAT_TRY(add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 1, &cmp, "namespace flag"));
  }
  if (with_newtime) {
    scmp_arg_cmp cmp = SCMP_A0(SCMP_CMP_MASKED_EQ, kCloneNewTime, kCloneNewTime);
    MOAT_TRY(add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 1, &cmp, "CLONE_NEWTIME"));
  }
  return {};
}

// Memory shared with another process that keeps running: it could rewrite an exec's path or
// argv between the exec watch's read and the kernel's. Threads (CLONE_THREAD) are seen by the
// watch, a vfork parent (CLONE_VFORK) is suspended until the exec.
constexpr unsigned long kCloneShareBits = CLONE_VM | CLONE_VFORK | CLONE_THREAD;

// A vfork child made with CLONE_PARENT is its grandparent's child: the watch, walking up
// the parents, would never meet the process whose other threads run on in that memory.
constexpr unsigned long kCloneParentBits = CLONE_VM | CLONE_PARENT | CLONE_THREAD;

Result<void> add_clone_rules(scmp_filter_ctx ctx, int nr, const ArgumentRule&, bool) {
  scmp_arg_cmp cmp = SCMP_A0(SCMP_CMP_MASKED_EQ, kCloneShareBits, CLONE_VM);
  MOAT_TRY(add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 1, &cmp, "CLONE_VM alone"));
  scmp_arg_cmp parent = SCMP_A0(SCMP_CMP_MASKED_EQ, kCloneParentBits, CLONE_VM | CLONE_PARENT);
  MOAT_TRY(add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 1, &parent, "CLONE_VM with CLONE_PARENT"));
  return add_namespace_flag_rules(ctx, nr, false);
}

Result<void> add_unshare_rules(scmp_filter_ctx ctx, int nr, const ArgumentRule&, bool) {
  return add_namespace_flag_rules(ctx, nr, true);
}

// A filter of the sandboxed code's own that returns USER_NOTIF for execve would be asked
// before moat's exec watch (the newest filter of equal precedence wins) and could answer
// "continue" for a program moat would refuse: no listener for sandboxed code.
Result<void> add_seccomp_rules(scmp_filter_ctx ctx, int nr, const ArgumentRule&, bool) {
  scmp_arg_cmp cmp = SCMP_A1(SCMP_CMP_MASKED_EQ, SECCOMP_FILTER_FLAG_NEW_LISTENER,
                             SECCOMP_FILTER_FLAG_NEW_LISTENER);
  return add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 1, &cmp, "SECCOMP_FILTER_FLAG_NEW_LISTENER");
}

// Every family but the allowed ones fails as if the kernel lacked it, which is what
// programs already handle (glibc's getaddrinfo falls back when netlink is missing).
Result<void> add_socket_family_rules(scmp_filter_ctx ctx, int nr, const ArgumentRule& rule,
                                     bool network) {
  for (int family = 0; family < AF_MAX; ++family) {
    if (family == AF_UNIX) continue;
    if (network && (family == AF_INET || family == AF_INET6)) continue;
    scmp_arg_cmp cmp = SCMP_A0(SCMP_CMP_EQ, static_cast<scmp_datum_t>(family));
    MOAT_TRY(add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), nr, 1, &cmp, rule.name));
  }
  // Families above AF_MAX do not exist today; a future one must not slip through.
  scmp_arg_cmp high = SCMP_A0(SCMP_CMP_GE, static_cast<scmp_datum_t>(AF_MAX));
  return add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), nr, 1, &high, rule.name);
}

// TIOCSTI pushes bytes into the terminal's input queue (a sandbox escape when the tty is
// shared, CVE-2017-5226); TIOCLINUX can read the console. The kernel compares only the low
// 32 bits of the request, so the filter does too.
Result<void> add_ioctl_rules(scmp_filter_ctx ctx, int nr, const ArgumentRule&, bool) {
  for (unsigned long request :
       {static_cast<unsigned long>(TIOCSTI), static_cast<unsigned long>(TIOCLINUX)}) {
    scmp_arg_cmp cmp = SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffUL, request);
    MOAT_TRY(add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 1, &cmp, "ioctl"));
  }
  return {};
}

// personality(2) takes an unsigned int: allow 0 (PER_LINUX) and 0xffffffff (the query).
// One comparison per argument per rule, so: bit 31 clear with any other bit set, or bit 31
// set with any other bit clear, is denied. ADDR_NO_RANDOMIZE and READ_IMPLIES_EXEC are why.
Result<void> add_personality_rules(scmp_filter_ctx ctx, int nr, const ArgumentRule&, bool) {
  for (int bit = 0; bit < 31; ++bit) {
    const scmp_datum_t b = 1UL << bit, top = 1UL << 31;
    scmp_arg_cmp low_set = SCMP_A0(SCMP_CMP_MASKED_EQ, top | b, b);
    MOAT_TRY(add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 1, &low_set, "personality"));
    scmp_arg_cmp high_partial = SCMP_A0(SCMP_CMP_MASKED_EQ, top | b, top);
    MOAT_TRY(add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 1, &high_partial, "personality"));
  }
  return {};
}

// Setuid and setgid bits never come from the sandbox: the workspace is an idmapped mount, so
// a setuid file created inside is, on the host, a setuid file of the workspace's owner.
// (fchmodat2 is not in the table, so it gets ENOSYS; openat2 is a named exception.)
Result<void> add_mode_rules(scmp_filter_ctx ctx, int nr, const ArgumentRule& rule, bool) {
  for (scmp_datum_t bit : {scmp_datum_t{S_ISUID}, scmp_datum_t{S_ISGID}}) {
    scmp_arg_cmp cmp{rule.mode_arg, SCMP_CMP_MASKED_EQ, bit, bit};
    MOAT_TRY(add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 1, &cmp, rule.name));
  }
  return {};
}

// fallocate(2) checks RLIMIT_FSIZE only where the file's size grows (inode_newsize_ok):
// FALLOC_FL_KEEP_SIZE allocates any amount past the end with no check (100 MiB under a 1 MiB
// limit on ext4, measured), and INSERT_RANGE and the others are not for build tools. The mode
// is an int: one rule per bit of its low 32 bits, as for personality.
Result<void> add_fallocate_rules(scmp_filter_ctx ctx, int nr, const ArgumentRule&, bool) {
  for (int bit = 0; bit < 32; ++bit) {
    const scmp_datum_t b = 1UL << bit;
    scmp_arg_cmp cmp = SCMP_A1(SCMP_CMP_MASKED_EQ, b, b);
    MOAT_TRY(add(ctx, SCMP_ACT_ERRNO(EOPNOTSUPP), nr, 1, &cmp, "fallocate"));
  }
  return {};
}

// In the order their rules are written (the compiled program is pinned by a golden file).
const ArgumentRule kArgumentRules[] = {
    {"clone",
     "allowed unless a namespace flag is set, or CLONE_VM without CLONE_THREAD or CLONE_VFORK, "
     "or CLONE_VM with CLONE_PARENT (a process sharing memory with one that runs, or with one "
     "the exec watch cannot find; it could not trust what it reads) (EPERM)",
     add_clone_rules},
    {"unshare", "allowed unless a namespace flag is set (EPERM)", add_unshare_rules},
    {"seccomp",
     "a nested filter is allowed (it can only narrow); SECCOMP_FILTER_FLAG_NEW_LISTENER EPERM: "
     "a listener of the code's own would answer the exec checks before moat's",
     add_seccomp_rules},
    {"socket",
     "AF_UNIX always, AF_INET/AF_INET6 only with network; other families "
     "EAFNOSUPPORT",
     add_socket_family_rules},
    {"socketpair", "as socket", add_socket_family_rules},
    {"ioctl", "TIOCSTI and TIOCLINUX (low 32 bits of the request) EPERM; the rest allowed",
     add_ioctl_rules},
    {"personality", "PER_LINUX and the 0xffffffff query allowed; anything else EPERM",
     add_personality_rules},
    {"open",
     "EPERM when the mode sets S_ISUID or S_ISGID: through the idmapped workspace a "
     "setuid file would be owned by the workspace's owner on the host (root, when "
     "moatd is root)",
     add_mode_rules, 2},
    {"openat", "as open", add_mode_rules, 3},
    {"creat", "as open", add_mode_rules, 1},
    {"chmod", "as open", add_mode_rules, 1},
    {"fchmod", "as open", add_mode_rules, 1},
    {"fchmodat", "as open", add_mode_rules, 2},
    {"mkdir", "as open (setgid directories)", add_mode_rules, 1},
    {"mkdirat", "as mkdir", add_mode_rules, 2},
    {"mknod", "as open; device nodes also need CAP_MKNOD and every mount is nodev", add_mode_rules,
     1},
    {"mknodat", "as mknod", add_mode_rules, 2},
    {"fallocate",
     "mode 0 (allocate and extend, bounded by RLIMIT_FSIZE) allowed; any mode bit "
     "EOPNOTSUPP: FALLOC_FL_KEEP_SIZE allocates blocks past the end of the file "
     "without RLIMIT_FSIZE's check (one file could take the whole disk), and "
     "EOPNOTSUPP is what callers already handle when a filesystem lacks a mode",
     add_fallocate_rules},
};

Result<void> add_set_rules(scmp_filter_ctx ctx, std::set<int>& known) {
  for (const SyscallSet& set : syscall_sets()) {
    for (const SyscallEntry& e : set.entries) {
      MOAT_ASSIGN_OR_RETURN(int nr, resolve(e.name));
      known.insert(nr);
      if (set.action == SetAction::kErrno)
        MOAT_TRY(add(ctx, SCMP_ACT_ERRNO(static_cast<uint16_t>(set.errno_value)), nr, 0, nullptr,
                     e.name));
    }
  }
  for (const NamedException& e : named_exceptions()) {
    MOAT_ASSIGN_OR_RETURN(int nr, resolve(e.name));
    known.insert(nr);
    MOAT_TRY(
        add(ctx, SCMP_ACT_ERRNO(static_cast<uint16_t>(e.errno_value)), nr, 0, nullptr, e.name));
  }
  for (const ArgumentRule& r : kArgumentRules) {
    MOAT_ASSIGN_OR_RETURN(int nr, resolve(r.name));
    known.insert(nr);
  }
  return {};
}

Result<void> add_argument_rules(scmp_filter_ctx ctx, bool network) {
  for (const ArgumentRule& r : kArgumentRules) {
    MOAT_ASSIGN_OR_RETURN(int nr, resolve(r.name));
    MOAT_TRY(r.add_rules(ctx, nr, r, network));
  }
  return {};
}

Result<FilterCtx> build(bool network) {
  FilterCtx ctx(seccomp_init(SCMP_ACT_ALLOW), seccomp_release);
  if (!ctx) return fail(Error::from_errno("seccomp_init", ENOMEM));
  int rc = seccomp_attr_set(ctx.get(), SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
  if (rc != 0) return fail(Error::from_errno("seccomp_attr_set", -rc, "badarch"));
  // The worker sets no_new_privs itself, as a checked step of its own.
  rc = seccomp_attr_set(ctx.get(), SCMP_FLTATR_CTL_NNP, 0);
  if (rc != 0) return fail(Error::from_errno("seccomp_attr_set", -rc, "nnp"));
  rc = seccomp_attr_set(ctx.get(), SCMP_FLTATR_CTL_OPTIMIZE, 2);  // binary search on numbers
  if (rc != 0) return fail(Error::from_errno("seccomp_attr_set", -rc, "optimize"));
  std::set<int> known;
  MOAT_TRY(add_set_rules(ctx.get(), known));
  MOAT_TRY(add_argument_rules(ctx.get(), network));
  for (int nr = 0; nr < kFilterMaxSyscall; ++nr)
    if (known.count(nr) == 0)
      MOAT_TRY(add(ctx.get(), SCMP_ACT_ERRNO(ENOSYS), nr, 0, nullptr, "unknown"));
  return ctx;
}

const char* action_name(const SyscallSet& set) {
  if (set.action == SetAction::kAllow) return "allow";
  return set.errno_value == ENOSYS ? "errno ENOSYS" : "errno EPERM";
}

}  // namespace

std::span<const ArgumentRule> argument_checked_syscalls() { return kArgumentRules; }

// The program libseccomp built, as the instructions the kernel loads.
static Result<std::vector<sock_filter>> export_program(scmp_filter_ctx ctx) {
  MOAT_ASSIGN_OR_RETURN(UniqueFd mem, sys::memfd("moat-seccomp"));
  int rc = seccomp_export_bpf(ctx, mem.get());
  if (rc != 0) return fail(Error::from_errno("seccomp_export_bpf", -rc));
  if (lseek(mem.get(), 0, SEEK_SET) != 0) return fail(Error::from_errno("lseek", errno));
  MOAT_ASSIGN_OR_RETURN(std::string bytes, sys::read_to_end(mem.get(), 1 << 20));
  if (bytes.empty() || bytes.size() % sizeof(sock_filter) != 0)
    return fail("seccomp_export_bpf: malformed program");
  std::vector<sock_filter> program(bytes.size() / sizeof(sock_filter));
  std::memcpy(program.data(), bytes.data(), bytes.size());
  return program;
}

Result<std::vector<sock_filter>> compile_filter(bool network) {
  MOAT_ASSIGN_OR_RETURN(FilterCtx ctx, build(network));
  return export_program(ctx.get());
}

std::string explain_filter(bool network) {
  std::string out = "seccomp filter (x86-64; first match wins)\n";
  out += "  1. any other architecture (i386 int 0x80, x32): kill process\n";
  out += "  2. argument-checked syscalls:\n";
  for (const ArgumentRule& r : kArgumentRules)
    out += std::string("       ") + r.name + ": " + r.reason + "\n";
  out += network ? "       (network granted: AF_INET and AF_INET6 allowed)\n"
                 : "       (no network: AF_INET and AF_INET6 fail with EAFNOSUPPORT)\n";
  out += "  3. named sets:\n";
  for (const SyscallSet& set : syscall_sets()) {
    out += std::string("     [") + set.name + "] " + action_name(set) + ": " + set.reason + "\n";
    for (const SyscallEntry& e : set.entries) {
      out += std::string("       ") + e.name;
      if (e.reason[0] != '\0') out += std::string(": ") + e.reason;
      out += "\n";
    }
  }
  out += "     named exceptions:\n";
  for (const NamedException& e : named_exceptions())
    out += std::string("       ") + e.name + ": errno " + strerrorname_np(e.errno_value) + ": " +
           e.reason + "\n";
  out += "  4. any other syscall number below " + std::to_string(kFilterMaxSyscall) +
         ": errno ENOSYS (not in the table, so never reviewed)\n";
  out += "  5. default: allow (only reachable for numbers the kernel does not have)\n";
  return out;
}

Result<std::vector<sock_filter>> compile_exec_watch_filter() {
  FilterCtx ctx(seccomp_init(SCMP_ACT_ALLOW), seccomp_release);
  if (!ctx) return fail("seccomp_init failed");
  // Another ABI's execve (int 0x80, x32) has another number: kill it here too, so the watch
  // holds even in a session allowed to run without the main filter.
  if (int rc = seccomp_attr_set(ctx.get(), SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS); rc != 0)
    return fail(Error::from_errno("seccomp_attr_set(badarch)", -rc));
  // `exit` too: a process whose last thread ends by the raw exit system call (no exit_group)
  // gives its parent the thread group leader's code, which only that call shows moat (issue 26
  // item 8: read from /proc after the fact, the parent had often reaped it already).
  for (const char* name : {"execve", "execveat", "exit_group", "exit"}) {
    MOAT_ASSIGN_OR_RETURN(int nr, resolve(name));
    int rc = seccomp_rule_add(ctx.get(), SCMP_ACT_NOTIFY, nr, 0);
    if (rc != 0) return fail(Error::from_errno("seccomp_rule_add(notify)", -rc, name));
  }
  return export_program(ctx.get());
}

}  // namespace moat::sandbox
