// sandbox/program_registry.cc: host pid -> the program it runs (see program_registry.h).
#include "sandbox/program_registry.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "base/unique_fd.h"

namespace moat::sandbox {
namespace {

// A fork chain deeper than this is not followed (each step is a read of /proc).
constexpr int kMaxAncestors = 64;

// The parent of `pid` from /proc/<pid>/status; -1 when it is gone.
pid_t parent_of(pid_t pid) {
  char path[32];
  std::snprintf(path, sizeof path, "/proc/%d/status", pid);
  UniqueFd fd(open(path, O_RDONLY | O_CLOEXEC));
  char buf[2048];
  const ssize_t n = fd.valid() ? read(fd.get(), buf, sizeof buf - 1) : -1;
  if (n <= 0) return -1;
  buf[n] = '\0';
  const char* at = std::strstr(buf, "\nPPid:");
  return at == nullptr ? -1 : static_cast<pid_t>(std::strtol(at + 6, nullptr, 10));
}

}  // namespace

void ProgramRegistry::started(pid_t pid, const std::string& call_id, const std::string& exec_id) {
  std::lock_guard<std::mutex> lock(mu_);
  by_pid_[pid] = ProgramRef{call_id, exec_id, pid};
}

void ProgramRegistry::ended(const std::string& exec_id) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = by_pid_.begin(); it != by_pid_.end(); ++it)
    if (it->second.exec_id == exec_id) {
      by_pid_.erase(it);
      return;
    }
}

std::vector<pid_t> ProgramRegistry::pids() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<pid_t> out;
  out.reserve(by_pid_.size());
  for (const auto& [pid, ref] : by_pid_) out.push_back(pid);
  return out;
}

std::optional<ProgramRef> ProgramRegistry::program_of(pid_t pid) const {
  for (int depth = 0; depth < kMaxAncestors && pid > 1; ++depth) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (auto it = by_pid_.find(pid); it != by_pid_.end()) return it->second;
    }
    pid = parent_of(pid);
  }
  return std::nullopt;
}

}  // namespace moat::sandbox
