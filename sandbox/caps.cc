// sandbox/caps.cc: dropping every capability (see caps.h). Raw prctl/capset, not libcap:
// libcap allocates, and this runs between fork and exec.
#include "sandbox/caps.h"

#include <linux/capability.h>
#include <linux/securebits.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace moat::sandbox {
namespace {

constexpr int kMaxCap = 63;  // the bounding-set loop stops at the first EINVAL below this

int clear_sets() {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (syscall(SYS_capset, &header, data) != 0) return errno;
  return 0;
}

}  // namespace

bool has_no_capabilities() {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (syscall(SYS_capget, &header, data) != 0) return false;
  for (const auto& d : data)
    if (d.effective != 0 || d.permitted != 0 || d.inheritable != 0) return false;
  for (int cap = 0; cap <= kMaxCap; ++cap) {
    int in_bounding = prctl(PR_CAPBSET_READ, cap, 0, 0, 0);
    if (in_bounding < 0) break;  // EINVAL: past the last capability this kernel knows
    if (in_bounding == 1) return false;
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, cap, 0, 0) == 1) return false;
  }
  return true;
}

int drop_all_caps_in_child() {
  // Securebits first: setting them needs CAP_SETPCAP, which the steps below remove. NOROOT
  // makes execve as uid 0 grant no capabilities; the _LOCKED bits make that permanent.
  const unsigned long bits = SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |
                             SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED |
                             SECBIT_NO_CAP_AMBIENT_RAISE | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED;
  if (prctl(PR_SET_SECUREBITS, bits, 0, 0, 0) != 0) return errno;
  if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0) return errno;
  // The bounding set also needs CAP_SETPCAP, so it goes before the permitted set.
  for (int cap = 0; cap <= kMaxCap; ++cap) {
    if (prctl(PR_CAPBSET_READ, cap, 0, 0, 0) < 0) break;
    if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0) return errno;
  }
  if (int err = clear_sets(); err != 0) return err;
  return has_no_capabilities() ? 0 : EPERM;  // refuse to continue if anything remains
}

}  // namespace moat::sandbox
