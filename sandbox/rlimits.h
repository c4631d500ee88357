// sandbox/rlimits.h: the resource limits every worker starts with.
#pragma once

#include <sys/resource.h>

#include <array>

namespace moat::sandbox {

struct Limits;

struct RlimitPlan {
  struct Entry {
    int resource;
    rlim_t value;
  };
  std::array<Entry, 10> entries{};
  int count = 0;
};

// Built before the fork (it reads the session's limits); 0 in Limits = leave unset.
RlimitPlan plan_rlimits(const Limits& limits);

// setrlimit for each entry, soft = hard, so the code cannot raise them back. Returns 0 or
// an errno. No heap: runs between fork and exec.
int apply_rlimits_in_child(const RlimitPlan& plan);

}  // namespace moat::sandbox
