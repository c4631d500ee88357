// tests/integration/e2e/pids_cap.h: a moatd whose tasks are held at a number by a cgroup v1 pids
// group of its own, so its next thread cannot start (EAGAIN): what a system moatd's unit's
// TasksMax or a user's RLIMIT_NPROC does. Root only; tests skip without it.
#pragma once

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include "e2e_support.h"

namespace moat::e2e {

// moatd's tasks held at a number by a pids cgroup (v1) of its own, as a system moatd's unit's
// TasksMax or a user's RLIMIT_NPROC holds them: its next thread cannot start (EAGAIN).
class PidsCap {
 public:
  explicit PidsCap(pid_t pid)
      : pid_(pid), dir_(std::string(kRoot) + "/moat-attack-" + std::to_string(::getpid())) {
    ok_ = ::geteuid() == 0 && ::mkdir(dir_.c_str(), 0755) == 0 &&
          put(dir_ + "/cgroup.procs", std::to_string(pid));
  }
  ~PidsCap() {
    if (::kill(pid_, 0) == 0) put(std::string(kRoot) + "/cgroup.procs", std::to_string(pid_));
    ::rmdir(dir_.c_str());
  }
  bool ok() const { return ok_; }
  long tasks() const { return std::atol(read_file(dir_ + "/pids.current").c_str()); }
  // No thread beyond `more` more than moatd has now.
  bool allow_more(long more) { return put(dir_ + "/pids.max", std::to_string(tasks() + more)); }
  bool lift() { return put(dir_ + "/pids.max", "max"); }

 private:
  static constexpr const char* kRoot = "/sys/fs/cgroup/pids";
  static bool put(const std::string& file, const std::string& text) {
    std::ofstream out(file);
    out << text;
    out.flush();
    return out.good();
  }
  pid_t pid_;
  std::string dir_;
  bool ok_ = false;
};

// A moatd under a pids cap, its tasks settled (the cgroup warm-up's thread ends within 250 ms).
#define MOAT_CAP_OR_SKIP(cap, moatd)                                                         \
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give moatd a pids cgroup of its own";  \
  PidsCap cap(moatd);                                                                         \
  if (!cap.ok()) GTEST_SKIP() << "no writable cgroup v1 pids hierarchy at /sys/fs/cgroup/pids"; \
  std::this_thread::sleep_for(std::chrono::milliseconds(400))

}  // namespace moat::e2e
