// sandbox/seccomp_policy.h: the ordered seccomp decisions built from seccomp_sets, compiled
// once per session and installed last in every worker.
#pragma once

#include <linux/filter.h>
#include <seccomp.h>

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/result.h"

namespace moat::sandbox {

// Syscall numbers below this that belong to no set get ENOSYS (a syscall newer than the
// table looks absent to the program, which programs handle); x86-64 numbers end far below it.
inline constexpr int kFilterMaxSyscall = 600;

struct BpfProgram {
  std::vector<sock_filter> insns;
};

// A syscall whose decision depends on an argument, with the reason explain-filter prints and
// the function that writes its rules: one row, so the explanation cannot drift from the filter.
struct ArgumentRule {
  const char* name;    // libseccomp's name for the x86-64 syscall
  const char* reason;  // what is allowed and what is denied, with which errno
  Result<void> (*add_rules)(scmp_filter_ctx ctx, int nr, const ArgumentRule& rule, bool network);
  unsigned mode_arg = 0;  // the mode rules only: which argument is the mode
};
std::span<const ArgumentRule> argument_checked_syscalls();

// Compiles the filter for a session; network decides whether AF_INET/AF_INET6 sockets exist.
Result<BpfProgram> compile_filter(bool network);

// libseccomp takes 4 to 9 ms to compile it, most of a session's setup (issue 15): moatd starts
// the compile on a thread of its own when it starts, and the first session, created after the
// policy and the audit log are open, finds it ready. precompiled_filter waits for a compile
// started for `network` and returns it; nullptr when none was started or it failed (the
// session's init then compiles the filter itself and reports the error). Thread-safe; call
// it before fork, never in a child: the compiling thread is not in the child.
void precompile_filter(bool network);
std::shared_ptr<const BpfProgram> precompiled_filter(bool network);

// Human-readable listing of every set, entry, action and reason (moat sandbox explain-filter).
std::string explain_filter(bool network);

// The exec watch: execve, execveat, exit_group and exit return SECCOMP_RET_USER_NOTIF,
// everything else is allowed (the session's filter, installed after it, decides the rest).
// moatd answers the notifications (sandbox/exec_watch.h).
Result<BpfProgram> compile_exec_watch_filter();
// Installs it with SECCOMP_FILTER_FLAG_NEW_LISTENER: the listener fd, or -errno. No heap.
int install_exec_watch_in_child(const BpfProgram& program);

// Installs the program in the calling (single-threaded) process. Returns 0 or an errno.
// No heap and no logging: it runs between fork and exec. no_new_privs must be set.
int install_filter_in_child(const BpfProgram& program);

}  // namespace moat::sandbox
