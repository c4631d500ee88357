// tests/support/proc_tree.h: a process's children and descendants and its state, read from
// /proc, for tests that check what a session leaves behind (header only).
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <system_error>

namespace moat::testing_support {

// `pid`'s children, from every thread's /proc/PID/task/TID/children; none once it is gone.
inline std::set<pid_t> children_of(pid_t pid) {
  std::set<pid_t> out;
  std::error_code ec;
  for (const auto& task :
       std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
    std::ifstream in(task.path() / "children");
    for (pid_t child; in >> child;) out.insert(child);
  }
  return out;
}

// `pid`'s descendants, at every depth.
inline std::set<pid_t> descendants_of(pid_t pid) {
  std::set<pid_t> out;
  for (pid_t child : children_of(pid)) {
    out.insert(child);
    for (pid_t d : descendants_of(child)) out.insert(d);
  }
  return out;
}

// A process's state letter from /proc/PID/stat ('Z' a zombie), or 0 once it is reaped.
inline char state_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line) || line.rfind(')') == std::string::npos) return 0;
  return line[line.rfind(')') + 2];
}

}  // namespace moat::testing_support
