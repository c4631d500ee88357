// sandbox/landlock.h: Landlock as a second filesystem layer, plus abstract-unix-socket and
// signal scoping, when the kernel has it.
#pragma once

#include <string>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"

namespace moat::sandbox {

// The kernel's Landlock ABI version, or 0 when Landlock is absent or disabled.
int landlock_abi();

struct LandlockRuleset {
  UniqueFd fd;
  int abi = 0;
  bool scoped = false;  // ABI >= 6: abstract unix sockets and signals scoped to the domain
};

// Built once in the session init, after pivot_root (paths are sandbox paths): read and
// execute beneath "/" (the mount view already decides what exists), full write access
// beneath write_paths. Fails with ENOSYS/EOPNOTSUPP when Landlock is unavailable.
Result<LandlockRuleset> make_landlock_ruleset(const std::vector<std::string>& write_paths);

// landlock_restrict_self in the worker; needs no_new_privs. Returns 0 or an errno.
int restrict_self_in_child(int ruleset_fd);

// Puts the calling thread (and what it starts later) in a Landlock domain that restricts no
// file access (it handles only making block devices, which nothing needs), for what Landlock
// does to any process in a domain: it may not ptrace, nor open /proc/<pid>/mem of, a process
// outside it. Needs no_new_privs. EOPNOTSUPP when Landlock is unavailable.
Result<void> enter_ptrace_scoped_domain();

}  // namespace moat::sandbox
