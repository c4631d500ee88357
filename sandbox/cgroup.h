// sandbox/cgroup.h: a per-session cgroup, when a writable hierarchy exists (v1 pids and
// memory controllers, or v2 with those controllers delegated): pids.max bounds a fork bomb
// across the whole session, the memory limit bounds its sum. With moatd.toml's [quota] memory
// or pids, the session's cgroup goes below its user's parent (<root>/moatd-<pid>/user-<uid>),
// which bounds the sum over all of that user's sessions on this moatd; the tighter wins. On
// v1 the roots are the hierarchies' (/sys/fs/cgroup/pids, memory); on v2, moatd's own cgroup.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace moat::sandbox {

struct Limits;
struct UserCgroup;

class ScopedCgroup {
 public:
  // Directories of the session's cgroups; empty when no hierarchy is writable (the reason
  // then says why).
  // `user`: the quota of the user the session is for (none: directly in the root).
  static Result<ScopedCgroup> create(const std::string& name, const Limits& limits,
                                     const UserCgroup& user);
  // A child `name` of each of the session's cgroups (`session_dirs`: describe().cgroup_dirs)
  // with its own limits (0: the session's), for one of its processes (an MCP server's
  // resources, docs/mcp.md): pids.max and memory.limit_in_bytes below the session's on cgroup
  // v1. v2 is refused naming why: the session's cgroup holds its keeper, and v2 enables no
  // controller for the children of a cgroup with processes.
  static Result<ScopedCgroup> create_child(const std::vector<std::string>& session_dirs,
                                           const std::string& name, std::uint64_t memory_bytes,
                                           std::uint64_t pids);
  ScopedCgroup() = default;
  ScopedCgroup(ScopedCgroup&& o) noexcept
      : dirs_(std::move(o.dirs_)), parents_(std::move(o.parents_)) {
    o.dirs_.clear();
    o.parents_.clear();
  }
  ScopedCgroup& operator=(ScopedCgroup&& o) noexcept;
  ScopedCgroup(const ScopedCgroup&) = delete;
  ScopedCgroup& operator=(const ScopedCgroup&) = delete;
  // Removes the directories (their processes are gone by then), and the user's parent when
  // this was the last session in it.
  ~ScopedCgroup();

  bool active() const { return !dirs_.empty(); }
  const std::vector<std::string>& dirs() const { return dirs_; }
  // Moves pid (the session's keeper, before it forks the init; a child's one process, before
  // its program runs) into every cgroup.
  Result<void> attach(pid_t pid) const;

  // Why there is no cgroup on this machine, or empty when a hierarchy is writable.
  static std::string unavailable_reason();

 private:
  Result<void> add_dir(const std::string& root, const std::string& name, const Limits& limits,
                       const UserCgroup& user, const char* pids_file, const char* memory_file);

  std::vector<std::string> dirs_;
  std::vector<std::string> parents_;  // the user's parent in each hierarchy, with a quota
};

// A write to cgroup.procs when none was made for a while waits an RCU grace period (the
// kernel's cgroup_threadgroup_rwsem, taken for writing: 5-15 ms on an idle host); one made
// within about 10 ms after another does not. warm_cgroup_attach() moves moatd into the v1 pids
// cgroup it is already in (a move of nothing) and returns once the kernel did: false when there
// is no such cgroup or the write was refused (a rootless moatd), which changes nothing. cgroup
// v1 only: on v2 moatd may be moving itself into its leaf (v2_base_once), and a write of its old
// cgroup then would move it back.
bool warm_cgroup_attach();
// warm_cgroup_attach() on a thread of its own, as moatd starts, then again at each
// ticks::kCgroupKeepWarm until the first attach() is done (at most 250 ms); returns at once. The
// keeper's attach, once the hello came, then waits at most what is left of the first grace
// period. The keeper still joins its cgroup before it forks the init: nothing of a session runs
// outside it.
void start_attach_warmup();

// moatd's own cgroup v2 path ("/system.slice/moatd.service") from /proc/self/cgroup's text:
// its "0::" line; empty when there is none (cgroup v1 only).
std::string v2_cgroup_of(std::string_view proc_self_cgroup);

}  // namespace moat::sandbox
