// sandbox/session_init.h: the session's init: pid 1 of the session's pid namespace. It builds
// the filesystem view, then reaps and forks a worker per call on moatd's request; when it
// dies, the kernel kills everything in the session. What it and moatd say to each other is
// sandbox/init_contract.h.
#pragma once

#include <string>
#include <vector>

#include "sandbox/init_contract.h"
#include "sandbox/session_config.h"

namespace moat::sandbox {

struct InitContext {
  SessionConfig config;
  int ctl_fd = -1;          // SOCK_SEQPACKET to moatd; per-call requests arrive here
  int workspace_tree = -1;  // detached workspace tree (idmapped by moatd, or the keeper's clone)
};

// What Landlock lets the session's workers write beneath: the policy's writable roots for the
// workspace (policy/writable_roots.h, the one list) and the writable binds' targets, which the
// policy counts as writable too (its extra_writable_roots). A root the view lacks is skipped
// by make_landlock_ruleset.
std::vector<std::string> landlock_write_paths(const SessionConfig& config);

// Runs in the session's pid 1 after the namespaces exist and the ids are mapped; never
// returns. Sends kReady or kError on ctl_fd.
[[noreturn]] void run_session_init(const InitContext& ctx);

// A pooled session's init made before its hello (moatd as root): with `ctx.config` the pool's
// shape, it does what does not depend on the workspace (its own hardening, hostname, loopback,
// ns_mount.h stage_view_in_init), then waits for kFinish on ctl_fd, whose config must have the
// shape's view (read_only, hostname, tmp_size), and finishes as run_session_init. A failure
// before kFinish sends kError, so the pool discards it.
[[noreturn]] void run_session_init_ahead(InitContext& ctx);

}  // namespace moat::sandbox
