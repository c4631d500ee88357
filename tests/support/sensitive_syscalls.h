// tests/support/sensitive_syscalls.h: the kernel's x86-64 syscalls that take a file handle, a
// key, a namespace or mount, a privileged clock, an LSM attribute or a quota, each with the
// errno a sandboxed caller must get. Reviewed against arch/x86/entry/syscalls/syscall_64.tbl
// of Linux 6.18; the numbers are the table's, so calls libseccomp 2.5.4 cannot name
// (statmount and later) are covered too: the filter's step 4 answers them ENOSYS.
#pragma once

#include <cerrno>

namespace moat::testing {

struct SensitiveSyscall {
  const char* name;
  long nr;                // x86-64
  int err;                // what the filter answers: whatever the arguments, unless by_flags
  bool by_flags = false;  // argument-checked: denied when a namespace flag is set (all ones)
};

inline constexpr SensitiveSyscall kSensitiveSyscalls[] = {
    // file handles and filesystem-wide marks
    {"name_to_handle_at", 303, EPERM},
    {"open_by_handle_at", 304, EPERM},
    {"fanotify_init", 300, EPERM},
    {"fanotify_mark", 301, EPERM},
    // keys: the keyring is not namespaced
    {"add_key", 248, EPERM},
    {"request_key", 249, EPERM},
    {"keyctl", 250, EPERM},
    // namespaces and mounts (clone and unshare are argument-checked: all-ones flags hold
    // every namespace bit)
    {"setns", 308, EPERM},
    {"unshare", 272, EPERM, true},
    {"clone", 56, EPERM, true},
    {"clone3", 435, ENOSYS},
    {"mount", 165, EPERM},
    {"umount2", 166, EPERM},
    {"pivot_root", 155, EPERM},
    {"chroot", 161, EPERM},
    {"open_tree", 428, EPERM},
    {"move_mount", 429, EPERM},
    {"fsopen", 430, EPERM},
    {"fsconfig", 431, EPERM},
    {"fsmount", 432, EPERM},
    {"fspick", 433, EPERM},
    {"mount_setattr", 442, EPERM},
    {"statmount", 457, ENOSYS},
    {"listmount", 458, ENOSYS},
    {"open_tree_attr", 467, ENOSYS},
    {"sethostname", 170, EPERM},
    {"setdomainname", 171, EPERM},
    // privileged clocks
    {"settimeofday", 164, EPERM},
    {"clock_settime", 227, EPERM},
    {"clock_adjtime", 305, EPERM},
    {"adjtimex", 159, EPERM},
    // LSM attributes
    {"lsm_get_self_attr", 459, ENOSYS},
    {"lsm_set_self_attr", 460, ENOSYS},
    {"lsm_list_modules", 461, ENOSYS},
    // quotas
    {"quotactl", 179, EPERM},
    {"quotactl_fd", 443, EPERM},
};

}  // namespace moat::testing
