// sandbox/cgroup.cc: the per-session cgroup (see cgroup.h).
#include "sandbox/cgroup.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
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
// The leaf of its own v2 cgroup moatd moves itself into (v2_base_once).
constexpr const char* kV2Leaf = "moatd";

Result<void> write_file(const std::string& path, const std::string& text) {
  MOAT_ASSIGN_OR_RETURN(UniqueFd fd, sys::open_path(path, O_WRONLY));
  return sys::write_all(fd.get(), text.data(), text.size());
}

bool writable_dir(const std::string& dir) { return access(dir.c_str(), W_OK) == 0; }

std::string read_text(const std::string& path) {
  auto text = sys::read_file(path);
  return text ? std::move(*text) : std::string();
}

bool has_both_controllers(const std::string& list) {
  return list.find("pids") != std::string::npos && list.find("memory") != std::string::npos;
}

Result<std::string> make_dir(const std::string& parent, const std::string& name) {
  std::string dir = parent + "/" + name;
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
    return fail(Error::from_errno("mkdir", errno, dir));
  return dir;
}

// Where v2 is mounted (the hybrid layout's unified/ first), and moatd's own cgroup in it.
struct V2Place {
  std::string mount;
  std::string own;  // "/" or "/system.slice/moatd.service"; "/.../moatd" once moatd moved
};

std::optional<V2Place> v2_place() {
  for (const char* mount : kV2Roots) {
    if (::access((std::string(mount) + "/cgroup.controllers").c_str(), R_OK) != 0) continue;
    std::string own = v2_cgroup_of(read_text("/proc/self/cgroup"));
    if (!own.empty()) return V2Place{mount, own};
  }
  return std::nullopt;
}

// The v2 directory sessions go under: moatd's own cgroup (systemd's Delegate=yes gives it
// moatd.service's), not the root, which is the host's. A cgroup with processes enables no
// controller for its children (cgroup-v2.rst, "no internal process"), so moatd first moves
// itself into a leaf "moatd" of its own cgroup, then enables pids and memory below it. Once.
Result<std::string> v2_base_once(const V2Place& at) {
  std::string own = at.own;
  const std::string leaf = "/" + std::string(kV2Leaf);
  if (own.size() > leaf.size() && own.compare(own.size() - leaf.size(), leaf.size(), leaf) == 0)
    own.resize(own.size() - leaf.size());  // moved there before (a test's earlier session)
  std::string base = at.mount + (own == "/" ? "" : own);
  if (!has_both_controllers(read_text(base + "/cgroup.controllers")))
    return fail("cgroup v2 " + base + ": pids and memory are not delegated to moatd's cgroup");
  if (has_both_controllers(read_text(base + "/cgroup.subtree_control"))) return base;
  if (own != "/") {
    MOAT_ASSIGN_OR_RETURN(std::string dir, make_dir(base, kV2Leaf));
    MOAT_TRY(write_file(dir + "/cgroup.procs", std::to_string(::getpid())));
  }
  MOAT_TRY(write_file(base + "/cgroup.subtree_control", "+pids +memory"));
  return base;
}

// moatd's v2 base, or why there is none; worked out on first use (it may move moatd).
const Result<std::string>& v2_base() {
  static const Result<std::string> base = []() -> Result<std::string> {
    auto at = v2_place();
    if (!at) return fail("no cgroup v2 hierarchy");
    return v2_base_once(*at);
  }();
  return base;
}

// The per-user parents (issue 30): <root>/moatd-<moatd's pid>/user-<uid>, holding [quota]
// memory and pids over all of the user's sessions on this moatd (another moatd, a test's,
// has its own). Made, and removed once empty, under this lock, so a session's end never
// removes a parent between another session's mkdir of it and of its child.
std::mutex& parents_mu() {
  static std::mutex mu;
  return mu;
}

// The user's parent in `root`, with its limits (`pids_file`/`memory_file` nullptr: not this
// hierarchy's controller). On v2 each level enables both controllers for the next.
Result<std::string> user_parent(const std::string& root, const UserCgroup& user,
                                const char* pids_file, const char* memory_file, bool v2) {
  MOAT_ASSIGN_OR_RETURN(std::string moatd, make_dir(root, "moatd-" + std::to_string(::getpid())));
  if (v2) MOAT_TRY(write_file(moatd + "/cgroup.subtree_control", "+pids +memory"));
  MOAT_ASSIGN_OR_RETURN(std::string dir, make_dir(moatd, "user-" + std::to_string(user.uid)));
  if (v2) MOAT_TRY(write_file(dir + "/cgroup.subtree_control", "+pids +memory"));
  if (pids_file && user.pids) MOAT_TRY(write_file(dir + "/" + pids_file, std::to_string(user.pids)));
  if (memory_file && user.memory_bytes)
    MOAT_TRY(write_file(dir + "/" + memory_file, std::to_string(user.memory_bytes)));
  return dir;
}

// rmdir of `dir` and every cgroup below it, deepest first; a cgroup with processes stays.
void remove_tree(const std::string& dir) {
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec))
    if (e.is_directory(ec) && !e.is_symlink(ec)) remove_tree(e.path().string());
  ::rmdir(dir.c_str());
}

// Sessions of a moatd that was killed leave empty cgroups named after their keeper's pid.
// Only those whose keeper no longer exists are removed; rmdir refuses a cgroup with processes.
void remove_stale(const std::string& root) {
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(root, ec)) {
    std::string name = e.path().filename().string();
    if (name.rfind("moat-", 0) != 0 && name.rfind("moatd-", 0) != 0) continue;
    // moatd-<pid>: the per-user parents of a moatd that is gone, with what is left below them.
    const bool of_moatd = name.rfind("moatd-", 0) == 0;
    pid_t pid = static_cast<pid_t>(std::atoi(name.c_str() + (of_moatd ? 6 : 5)));
    if (pid <= 0 || kill(pid, 0) == 0 || errno != ESRCH) continue;
    if (of_moatd) remove_tree(e.path().string());
    else ::rmdir(e.path().c_str());
  }
}

// How long moatd's warm-up keeps the kernel's lock warm at most, waiting for its first session's
// attach: a private moatd's comes 5-40 ms after its start (the hello's steps, a loaded host).
// A deadline, not a tick.
constexpr std::chrono::milliseconds kAttachWarmFor{250};
// Attaches done by this process: one after the warm-up started ends it (it served its purpose).
std::atomic<std::uint64_t> g_attaches{0};

// The cgroup.procs of moatd's own cgroup in the v1 pids hierarchy ("N:pids:/path" in
// /proc/self/cgroup); empty when it has none.
std::string own_v1_procs_file() {
  const std::string text = read_text("/proc/self/cgroup");
  const auto at = text.find(":pids:/");
  if (at == std::string::npos) return "";
  std::string path = text.substr(at + 6, text.find('\n', at) - (at + 6));
  if (path == "/") path.clear();
  return std::string(kV1[0].root) + path + "/cgroup.procs";
}

}  // namespace

bool warm_cgroup_attach() {
  const std::string procs = own_v1_procs_file();
  return !procs.empty() && write_file(procs, std::to_string(::getpid())).has_value();
}

void start_attach_warmup() {
  std::thread([] {
    const auto until = std::chrono::steady_clock::now() + kAttachWarmFor;
    const std::uint64_t attaches = g_attaches.load();
    if (!warm_cgroup_attach()) return;
    while (g_attaches.load() == attaches && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(ticks::kCgroupKeepWarm);
      (void)warm_cgroup_attach();
    }
  }).detach();
}

std::string v2_cgroup_of(std::string_view text) {
  for (std::size_t at = 0; at < text.size();) {
    std::size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(at, end - at);
    if (line.rfind("0::/", 0) == 0) return std::string(line.substr(3));
    at = end + 1;
  }
  return "";
}

std::string ScopedCgroup::unavailable_reason() {
  for (const auto& h : kV1)
    if (writable_dir(h.root)) return "";
  if (v2_place() && v2_base()) return "";
  return "no writable cgroup hierarchy with pids and memory controllers (rootless, or not "
         "delegated)";
}

// The session's cgroup `name` in one hierarchy, below the user's parent when there is a quota.
Result<void> ScopedCgroup::add_dir(const std::string& root, const std::string& name,
                                   const Limits& limits, const UserCgroup& user,
                                   const char* pids_file, const char* memory_file) {
  remove_stale(root);
  std::string parent = root;
  if (user.any()) {
    MOAT_ASSIGN_OR_RETURN(parent, user_parent(root, user, pids_file, memory_file,
                                              pids_file != nullptr && memory_file != nullptr));
    parents_.push_back(parent);
  }
  MOAT_ASSIGN_OR_RETURN(std::string dir, make_dir(parent, name));
  dirs_.push_back(dir);
  if (pids_file && limits.pids)
    MOAT_TRY(write_file(dir + "/" + pids_file, std::to_string(limits.pids)));
  if (memory_file && limits.memory_bytes)
    MOAT_TRY(write_file(dir + "/" + memory_file, std::to_string(limits.memory_bytes)));
  return {};
}

Result<ScopedCgroup> ScopedCgroup::create(const std::string& name, const Limits& limits,
                                          const UserCgroup& user) {
  ScopedCgroup cg;  // declared first: on a failure it is removed after the lock is released
  std::lock_guard<std::mutex> lock(parents_mu());
  for (const auto& h : kV1) {
    if (!writable_dir(h.root)) continue;
    MOAT_TRY(cg.add_dir(h.root, name, limits, user, h.memory ? nullptr : h.file,
                        h.memory ? h.file : nullptr));
  }
  if (cg.active() || !v2_place()) return cg;
  const Result<std::string>& base = v2_base();
  if (!base) return cg;  // unavailable_reason() says why
  MOAT_TRY(cg.add_dir(*base, name, limits, user, "pids.max", "memory.max"));
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
  g_attaches.fetch_add(1);
  return {};
}

ScopedCgroup& ScopedCgroup::operator=(ScopedCgroup&& o) noexcept {
  dirs_.swap(o.dirs_);
  parents_.swap(o.parents_);
  return *this;
}

ScopedCgroup::~ScopedCgroup() {
  // The pid namespace's processes may take a moment to be released after the init is reaped.
  for (const auto& dir : dirs_)
    for (int i = 0; i < 50 && ::rmdir(dir.c_str()) != 0 && errno == EBUSY; ++i)
      std::this_thread::sleep_for(ticks::kCgroupRelease);
  if (parents_.empty()) return;
  // The user's parent goes with their last session (rmdir refuses one that still has a
  // child), and moatd's own directory with its last user.
  std::lock_guard<std::mutex> lock(parents_mu());
  for (const auto& parent : parents_) {
    ::rmdir(parent.c_str());
    ::rmdir(parent.substr(0, parent.rfind('/')).c_str());
  }
}

}  // namespace moat::sandbox
