// sandbox/rlimits.h: the resource limits every worker starts with.
#pragma once

#include <sys/resource.h>

#include <array>

#include "sandbox/init_contract.h"
#include "sandbox/session_config.h"

namespace moat::sandbox {

struct RlimitPlan {
  struct Entry {
    int resource;
    rlim_t value;
  };
  std::array<Entry, 10> entries{};
  int count = 0;
};

// The session's limits with a call's own below them (CallLimits): each the smaller of the two
// that are set; never wider than the session's.
Limits narrowed(Limits session, const CallLimits& call);

// Built before the fork (it reads the session's limits); 0 in Limits = leave unset.
RlimitPlan plan_rlimits(const Limits& limits);

// setrlimit for each entry, soft = hard, so the code cannot raise them back. Returns 0 or
// an errno. No heap: runs between fork and exec.
int apply_rlimits_in_child(const RlimitPlan& plan);

}  // namespace moat::sandbox
