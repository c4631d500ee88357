// agent/unprivileged.h: the loop process gives up what it does not need before it talks to
// the model: root's identity, every capability, exec, ptrace, mount and new namespaces.
#pragma once

#include <sys/types.h>

#include "base/host_defaults.h"
#include "base/result.h"

namespace moat::agent {

struct DropOptions {
  uid_t uid = kUnprivilegedUid;  // the identity a root-started loop switches to
  gid_t gid = kUnprivilegedGid;
};

// In this order, each step checked: (as root) clear supplementary groups and switch to
// uid/gid; drop every capability (bounding set first, while we may still, then ambient,
// inheritable, permitted, effective); set no_new_privs; install the loop's seccomp filter.
// Call it after moatd is spawned and the session file, the socket and the provider's
// connection settings are open: after it, this process can never exec again.
Result<void> drop_to_unprivileged_loop(const DropOptions& options);

// The filter alone, built from the sandbox's table (sandbox/seccomp_sets.h): its
// namespace_change and other_processes sets (EPERM: the mount family, pivot_root, chroot,
// setns, ptrace, process_vm_*, ...), plus execve/execveat, unshare, and clone with namespace
// flags → EPERM; its clone3 exception → ENOSYS (glibc falls back to clone, whose flags the
// filter can read). Everything else the loop needs is allowed.
Result<void> install_loop_filter();

}  // namespace moat::agent
