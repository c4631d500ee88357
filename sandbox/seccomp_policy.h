// sandbox/seccomp_policy.h: the ordered seccomp decisions built from seccomp_sets, compiled
// when moat is built (seccomp_programs.h, which installs them last in every worker).
#pragma once

#include <linux/filter.h>
#include <seccomp.h>

#include <span>
#include <string>
#include <vector>

#include "base/result.h"

namespace moat::sandbox {

// Syscall numbers below this that belong to no set get ENOSYS (a syscall newer than the
// table looks absent to the program, which programs handle); x86-64 numbers end far below it.
inline constexpr int kFilterMaxSyscall = 600;

// A syscall whose decision depends on an argument, with the reason explain-filter prints and
// the function that writes its rules: one row, so the explanation cannot drift from the filter.
struct ArgumentRule {
  const char* name;    // libseccomp's name for the x86-64 syscall
  const char* reason;  // what is allowed and what is denied, with which errno
  Result<void> (*add_rules)(scmp_filter_ctx ctx, int nr, const ArgumentRule& rule, bool network);
  unsigned mode_arg = 0;  // the mode rules only: which argument is the mode
};
std::span<const ArgumentRule> argument_checked_syscalls();

// The compiles below run at build time (seccomp_generate.cc) and in the tests that hold the
// embedded programs to them; moatd and the session's init use seccomp_programs.h and link no
// libseccomp (a compile took 4 to 9 ms of CPU, issue 30).
//
// Compiles the filter for a session; network decides whether AF_INET/AF_INET6 sockets exist.
Result<std::vector<sock_filter>> compile_filter(bool network);

// Human-readable listing of every set, entry, action and reason (moat sandbox explain-filter).
std::string explain_filter(bool network);

// The exec watch: execve, execveat, exit_group and exit return SECCOMP_RET_USER_NOTIF,
// everything else is allowed (the session's filter, installed after it, decides the rest).
// moatd answers the notifications (sandbox/exec_watch.h).
Result<std::vector<sock_filter>> compile_exec_watch_filter();

}  // namespace moat::sandbox
