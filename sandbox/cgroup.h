// sandbox/cgroup.h: a per-session cgroup, when a writable hierarchy exists (v1 pids and
// memory controllers, or v2 with those controllers delegated): pids.max bounds a fork bomb
// across the whole session, the memory limit bounds its sum.
#pragma once

#include <sys/types.h>

#include <cstdint>
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
  // A child `name` of each of the session's cgroups (`session_dirs`: describe().cgroup_dirs)
  // with its own limits (0: the session's), for one of its processes (an MCP server's
  // resources, docs/mcp.md): pids.max and memory.limit_in_bytes below the session's on cgroup
  // v1. v2 is refused naming why: the session's cgroup holds its keeper, and v2 enables no
  // controller for the children of a cgroup with processes.
  static Result<ScopedCgroup> create_child(const std::vector<std::string>& session_dirs,
                                           const std::string& name, std::uint64_t memory_bytes,
                                           std::uint64_t pids);
  ScopedCgroup() = default;
  ScopedCgroup(ScopedCgroup&& o) noexcept : dirs_(std::move(o.dirs_)) { o.dirs_.clear(); }
  ScopedCgroup& operator=(ScopedCgroup&& o) noexcept;
  ScopedCgroup(const ScopedCgroup&) = delete;
  ScopedCgroup& operator=(const ScopedCgroup&) = delete;
  ~ScopedCgroup();  // removes the directories (their processes are gone by then)

  bool active() const { return !dirs_.empty(); }
  const std::vector<std::string>& dirs() const { return dirs_; }
  // Moves pid (the session's keeper, before it forks the init; a child's one process, before
  // its program runs) into every cgroup.
  Result<void> attach(pid_t pid) const;

  // Why there is no cgroup on this machine, or empty when a hierarchy is writable.
  static std::string unavailable_reason();

 private:
  std::vector<std::string> dirs_;
};

}  // namespace moat::sandbox
