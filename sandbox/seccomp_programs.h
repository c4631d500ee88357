// sandbox/seccomp_programs.h: the seccomp programs the workers install, compiled when moat is
// built (seccomp_generate.cc runs seccomp_policy.h's compile), and the calls that install them.
#pragma once

#include <linux/filter.h>

#include <span>

namespace moat::sandbox {

// A classic BPF program as seccomp(2) loads it. The programs below live as long as the process.
struct BpfProgram {
  std::span<const sock_filter> insns;
};

// Each program depends only on the build (the table in seccomp_sets.cc, the ordered decisions in
// seccomp_policy.cc, libseccomp's version and its x86-64 tables), never on a runtime input, so
// the build compiles it once (sandbox/meson.build) instead of every moatd start and every
// session's init (4 to 9 ms of CPU each, issue 30). The unit test
// SeccompPrograms.EachEmbeddedProgramIsWhatLibseccompCompilesHere holds each to
// seccomp_policy.h's compile on the machine that runs the tests.
//
// The session's filter (compile_filter): network decides whether AF_INET/AF_INET6 sockets exist.
const BpfProgram& session_filter(bool network);
// The exec watch (compile_exec_watch_filter): execve, execveat, exit_group and exit return
// SECCOMP_RET_USER_NOTIF, everything else is allowed (the session's filter, installed after it,
// decides the rest). moatd answers the notifications (sandbox/exec_watch.h).
const BpfProgram& exec_watch_filter();

// Installs the exec watch with SECCOMP_FILTER_FLAG_NEW_LISTENER: the listener fd, or -errno.
// No heap.
int install_exec_watch_in_child(const BpfProgram& program);

// Installs the program in the calling (single-threaded) process. Returns 0 or an errno.
// No heap and no logging: it runs between fork and exec. no_new_privs must be set.
int install_filter_in_child(const BpfProgram& program);

}  // namespace moat::sandbox
