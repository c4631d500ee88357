// sandbox/cgroup.h: a per-session cgroup, when a writable hierarchy exists (v1 pids and
// memory controllers, or v2 with those controllers delegated): pids.max bounds a fork bomb
// across the whole session, the memory limit bounds its sum.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "base/result.h"

namespace moat::sandbox {

struct Limits;

class ScopedCgroup {
 public:
  // Directories of the session's cgroups; empty when no hierarchy is writable (the reason
  // then says why).
  static Result<ScopedCgroup> create(const std::string& name, const Limits& limits);
  ScopedCgroup() = default;
  ScopedCgroup(ScopedCgroup&& o) noexcept : dirs_(std::move(o.dirs_)) { o.dirs_.clear(); }
  ScopedCgroup& operator=(ScopedCgroup&& o) noexcept;
  ScopedCgroup(const ScopedCgroup&) = delete;
  ScopedCgroup& operator=(const ScopedCgroup&) = delete;
  ~ScopedCgroup();  // removes the directories (their processes are gone by then)

  bool active() const { return !dirs_.empty(); }
  const std::vector<std::string>& dirs() const { return dirs_; }
  // Moves pid (the session's keeper, before it forks the init) into every cgroup.
  Result<void> attach(pid_t pid) const;

  // Why there is no cgroup on this machine, or empty when a hierarchy is writable.
  static std::string unavailable_reason();

 private:
  std::vector<std::string> dirs_;
};

}  // namespace moat::sandbox
