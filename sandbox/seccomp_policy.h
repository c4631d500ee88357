// sandbox/seccomp_policy.h: the ordered seccomp decisions built from seccomp_sets, compiled
// once per session and installed last in every worker.
#pragma once

#include <linux/filter.h>

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

// Compiles the filter for a session; network decides whether AF_INET/AF_INET6 sockets exist.
Result<BpfProgram> compile_filter(bool network);

// Human-readable listing of every set, entry, action and reason (moat sandbox explain-filter).
std::string explain_filter(bool network);

// Installs the program in the calling (single-threaded) process. Returns 0 or an errno.
// No heap and no logging: it runs between fork and exec. no_new_privs must be set.
int install_filter_in_child(const BpfProgram& program);

}  // namespace moat::sandbox
