// sandbox/session_config.h: what a sandbox session is built from (SessionConfig) and the
// ceilings every worker of it gets (Limits). A bottom header: the session, its init, the
// worker, the rlimits and the cgroup read these types, and include nothing above them.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "base/host_defaults.h"
#include "policy/schema.h"
#include "sandbox/protect.h"

namespace moat::sandbox {

// Ceilings applied to every worker of a session (0 = not set). moatd sets those a policy
// governs from the policy's effective ceilings; their defaults are the policy's own
// (policy/schema.h), so a session built without a policy gets what a default policy gives.
struct Limits {
  // per call; kills the worker's process group
  double wall_time_s = policy::kDefaultResources.wall_time_s;
  double session_wall_time_s = 0;  // whole session; kills the pid namespace
  std::uint64_t cpu_time_s = policy::kDefaultResources.cpu_time_s;  // RLIMIT_CPU
  // RLIMIT_AS (and memory.max with a cgroup)
  std::uint64_t memory_bytes = policy::kDefaultResources.memory_bytes;
  // RLIMIT_NPROC (non-root uid) and pids.max
  std::uint64_t pids = policy::kDefaultResources.pids;
  // RLIMIT_FSIZE (write, truncate, fallocate)
  std::uint64_t file_size = policy::kDefaultResources.file_size;
  std::uint64_t open_files = policy::kDefaultResources.open_files;  // RLIMIT_NOFILE
  std::uint64_t tmp_size = 256ull << 20;  // size= of the private /tmp tmpfs
  // what a call may print before it is killed
  std::uint64_t output_bytes = policy::kDefaultResources.output_bytes;
};

// moatd.toml's [quota] memory and pids (moatd_config.h) for the user a session is for (the
// peer's uid): the session's cgroup goes under that user's parent cgroup, which holds these
// limits over all of the user's sessions on this moatd (cgroup.h). 0: no such limit.
struct UserCgroup {
  uid_t uid = 0;
  std::uint64_t memory_bytes = 0;
  std::uint64_t pids = 0;
  std::string file;  // where the quota was read from, named when it cannot be enforced
  bool any() const { return memory_bytes != 0 || pids != 0; }
  bool operator==(const UserCgroup&) const = default;
};

// What runs inside a worker that does not exec: a pure function from a request (JSON text)
// to a response (JSON text), executed after every restriction of the worker is in place.
// It is a plain function pointer because the session init is a fork of moatd: the pointer
// is valid in its address space, a closure made later would not be.
using WorkerHandler = std::string (*)(std::string_view request);

// The layers SessionConfig::allow_without may name. The namespaces (user_ns, mount_ns, ...)
// are not among them: the session is its namespaces, there is no running without one. Any
// other name refuses the session, so a typo cannot leave a layer silently required or off.
inline constexpr const char* kSkippableLayers[] = {"seccomp", "landlock", "idmap", "cgroup",
                                                   "exec_watch"};

// A bind mount of the session (moat sandbox exec --ro-bind, --bind), as check_binds (binds.h)
// checked it.
struct SessionBind {
  std::string source;  // host path: normalised, no symlink at any component when checked
  std::string target;  // sandbox path
  bool writable = false;
  bool is_dir = false;
  // The source as checked (O_PATH), borrowed until Session::create returns: the session binds
  // this file or directory, never what the path names later.
  int fd = -1;
  bool fd_is_tree = false;  // Session::create's: fd is a detached tree to attach (moatd as root)
  std::vector<std::string> hidden;           // target-relative globs hidden before every call
  std::vector<std::string> protected_paths;  // writable only: masked read-only before every call
};

struct SessionConfig {
  std::string workspace;  // host path; bound read-write at the same path
  // The workspace opened by open_workspace (workspace.h), borrowed until create returns: the
  // session is built from this fd and never resolves `workspace` again. -1: create opens
  // `workspace` itself the same way (no symlink at any component).
  int workspace_fd = -1;
  std::vector<std::string> read_only;  // host paths bound read-only; empty = system default
  // Workspace-relative protected paths (".git/hooks", ".git/config", ".moat") and
  // policy-denied globs, re-derived and masked before every call.
  std::vector<std::string> protected_paths;
  // Workspace-relative protected paths (no glob) masked like protected_paths, but only where
  // they exist: a placeholder for a missing one would show the code a directory the host does
  // not have (`test -e .env`, an empty read-only `.git` that `git init` cannot fill). moatd
  // removes what a call creates under such a name instead (NestedGitWatch::sweep_created).
  std::vector<std::string> protected_if_present;
  // Workspace-relative paths and globs the policy denies reading (policy::unreadable_globs()):
  // covered by an empty read-only file or directory before every call, so their content is
  // invisible inside the sandbox. Missing ones are left alone (nothing to hide).
  std::vector<std::string> hidden_paths;
  // The per-call walk that finds glob matches visits at most this many entries; past it a
  // call is refused (E2BIG) rather than run with later matches unmasked.
  std::size_t max_protect_walk_entries = kMaxProtectWalkEntries;
  // Regular files with a name the walk cannot find inside the workspace (a hard link into a
  // pnpm store) are bound read-only before every call (mask_protected_paths' linked_files).
  // This makes every call walk the whole workspace; tests of the walk itself turn it off.
  bool mask_linked_files = true;
  std::vector<SessionBind> binds;  // after the system trees and the workspace, by depth
  bool network = false;            // false: a net namespace with loopback only
  // Not 0: the init listens on 127.0.0.1:net_proxy_port in the session's namespace and hands
  // the socket to moatd (take_net_listener), which serves the network proxy on it.
  int net_proxy_port = 0;
  Limits limits;
  UserCgroup user_cgroup;  // none (any() false) but on a moatd with [quota] memory or pids
  std::map<std::string, std::string> env;  // policy-set variables, added to the allowlist
  // Written to the sandbox's $HOME/.gitconfig (/tmp/.gitconfig) once the view is built: the
  // person's user.name and user.email (git_identity.h), nothing else of their git config.
  std::string home_gitconfig;
  std::string hostname = "moat";
  // host uid the sandbox's users map to when moatd is root
  uid_t unprivileged_uid = kUnprivilegedUid;
  gid_t unprivileged_gid = kUnprivilegedGid;
  // Layers the policy explicitly lets the session run without (kSkippableLayers). Anything
  // not listed that cannot be applied refuses the session; so does a name not in the list.
  std::set<std::string> allow_without;
  WorkerHandler handler = nullptr;  // used by run_handler()
  // Tests only: every worker of the session leaves out this step ("caps", "seccomp", ...; see
  // sandbox/worker.h), so a test can show its assertion fails without the step. moatd never
  // sets it.
  std::string test_skip_step;
  // Tests only: moatd waits this long before reading a call's start record, so a short
  // command has exited and been reaped by the init first. moatd never sets it.
  int test_delay_start_record_ms = 0;
};

}  // namespace moat::sandbox
