// sandbox/program_registry.h: which program each of a session's processes runs, as the exec
// watch let it run. The network proxy names, in each `net` record, the program that opened
// the connection: the exec record with the same exec_id (docs/sessions.md).
#pragma once

#include <sys/types.h>

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace moat::sandbox {

struct ProgramRef {
  std::string call_id;
  std::string exec_id;  // as the exec record names it: "c1.3"
  pid_t pid = -1;       // host pid of the process that runs it
};

// Thread-safe: the exec watches of the session's calls write, the proxy's threads read.
class ProgramRegistry {
 public:
  // `pid` now runs the program of `exec_id` (an exec the watch let run; a later exec of the
  // same process replaces it).
  void started(pid_t pid, const std::string& call_id, const std::string& exec_id);
  // The program of `exec_id` ended (or was replaced): forgotten, unless its process already
  // runs a later one.
  void ended(const std::string& exec_id);
  // The processes that run a program now.
  std::vector<pid_t> pids() const;
  // The program `pid` runs or, for a process that forked without an exec (a subshell, a
  // Python child), that of its nearest ancestor with one. nullopt when none has one.
  std::optional<ProgramRef> program_of(pid_t pid) const;

 private:
  mutable std::mutex mu_;
  std::map<pid_t, ProgramRef> by_pid_;
};

}  // namespace moat::sandbox
