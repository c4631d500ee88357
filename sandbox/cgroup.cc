// sandbox/cgroup.cc: the per-session cgroup (see cgroup.h).
#include "sandbox/cgroup.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "base/sys.h"
#include "base/ticks.h"
#include "sandbox/session_config.h"

namespace moat::sandbox {
namespace {

struct Hierarchy {
  const char* root;  // where the hierarchy is mounted
  const char* file;  // the limit file
  bool memory;       // which limit goes into it
};

// cgroup v1 first (this machine's), then v2 where the hybrid layout mounts it.
constexpr Hierarchy kV1[] = {{"/sys/fs/cgroup/pids", "pids.max", false},
                             {"/sys/fs/cgroup/memory", "memory.limit_in_bytes", true}};
constexpr const char* kV2Roots[] = {"/sys/fs/cgroup/unified", "/sys/fs/cgroup"};

Result<void> write_file(const std::string& path, const std::string& text) {
  MOAT_ASSIGN_OR_RETURN(UniqueFd fd, sys::open_path(path, O_WRONLY));
  return sys::write_all(fd.get(), text.data(), text.size());
}

bool writable_dir(const std::string& dir) { return access(dir.c_str(), W_OK) == 0; }

// A v2 hierarchy whose root delegates both controllers to children.
bool v2_usable(const std::string& root) {
  std::ifstream in(root + "/cgroup.subtree_control");
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return writable_dir(root) && all.find("pids") != std::string::npos &&
         all.find("memory") != std::string::npos;
}

Result<std::string> make_dir(const std::string& parent, const std::string& name) {
  std::string dir = parent + "/" + name;
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
    return fail(Error::from_errno("mkdir", errno, dir));
  return dir;
}

// Sessions of a moatd that was killed leave empty cgroups named after their keeper's pid.
// Only those whose keeper no longer exists are removed; rmdir refuses a cgroup with processes.
void remove_stale(const std::string& root) {
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(root, ec)) {
    std::string name = e.path().filename().string();
    if (name.rfind("moat-", 0) != 0) continue;
    pid_t pid = static_cast<pid_t>(std::atoi(name.c_str() + 5));
    if (pid > 0 && kill(pid, 0) != 0 && errno == ESRCH) ::rmdir(e.path().c_str());
  }
}

}  // namespace

std::string ScopedCgroup::unavailable_reason() {
  for (const auto& h : kV1)
    if (writable_dir(h.root)) return "";
  for (const char* root : kV2Roots)
    if (v2_usable(root)) return "";
  return "no writable cgroup hierarchy with pids and memory controllers (rootless, or not "
         "delegated)";
}

Result<ScopedCgroup> ScopedCgroup::create(const std::string& name, const Limits& limits) {
  ScopedCgroup cg;
  for (const auto& h : kV1)
    if (writable_dir(h.root)) remove_stale(h.root);
  for (const auto& h : kV1) {
    if (!writable_dir(h.root)) continue;
    MOAT_ASSIGN_OR_RETURN(std::string dir, make_dir(h.root, name));
    cg.dirs_.push_back(dir);
    std::uint64_t value = h.memory ? limits.memory_bytes : limits.pids;
    if (value) MOAT_TRY(write_file(dir + "/" + h.file, std::to_string(value)));
  }
  if (cg.active()) return cg;
  for (const char* root : kV2Roots) {
    if (!v2_usable(root)) continue;
    MOAT_ASSIGN_OR_RETURN(std::string dir, make_dir(root, name));
    cg.dirs_.push_back(dir);
    if (limits.pids) MOAT_TRY(write_file(dir + "/pids.max", std::to_string(limits.pids)));
    if (limits.memory_bytes)
      MOAT_TRY(write_file(dir + "/memory.max", std::to_string(limits.memory_bytes)));
    break;
  }
  return cg;
}

Result<ScopedCgroup> ScopedCgroup::create_child(const std::vector<std::string>& session_dirs,
                                                const std::string& name,
                                                std::uint64_t memory_bytes, std::uint64_t pids) {
  ScopedCgroup cg;
  for (const std::string& parent : session_dirs) {
    const Hierarchy* h = nullptr;
    for (const auto& v1 : kV1)
      if (parent.rfind(std::string(v1.root) + "/", 0) == 0) h = &v1;
    if (h == nullptr)
      return fail("cgroup " + parent + ": not a cgroup v1 pids or memory hierarchy; a child "
                  "cgroup needs v1 (on v2 the session's cgroup holds its keeper, and a cgroup "
                  "with processes enables no controller for its children)");
    MOAT_ASSIGN_OR_RETURN(std::string dir, make_dir(parent, name));
    cg.dirs_.push_back(dir);
    const std::uint64_t value = h->memory ? memory_bytes : pids;
    if (value) MOAT_TRY(write_file(dir + "/" + h->file, std::to_string(value)));
  }
  return cg;
}

Result<void> ScopedCgroup::attach(pid_t pid) const {
  for (const auto& dir : dirs_) MOAT_TRY(write_file(dir + "/cgroup.procs", std::to_string(pid)));
  return {};
}

ScopedCgroup& ScopedCgroup::operator=(ScopedCgroup&& o) noexcept {
  dirs_.swap(o.dirs_);
  return *this;
}

ScopedCgroup::~ScopedCgroup() {
  // The pid namespace's processes may take a moment to be released after the init is reaped.
  for (const auto& dir : dirs_)
    for (int i = 0; i < 50 && ::rmdir(dir.c_str()) != 0 && errno == EBUSY; ++i)
      std::this_thread::sleep_for(ticks::kCgroupRelease);
}

}  // namespace moat::sandbox
