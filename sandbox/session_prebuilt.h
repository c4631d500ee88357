// sandbox/session_prebuilt.h: a session built ahead of its hello, up to where the workspace is
// known (the pool's, session_pool.h): its keeper forked with every namespace but the mount
// namespace unshared, its id maps written, its cgroup and its idmap user namespace (moatd as
// root) made; finished into a Session once a hello's config arrives (the keeper then builds
// the view and forks the init).
#pragma once

#include <memory>
#include <optional>

#include "base/result.h"
#include "base/unique_fd.h"
#include "sandbox/cgroup.h"
#include "sandbox/session.h"
#include "sandbox/session_config.h"
#include "sandbox/session_description.h"
#include "sandbox/session_idmap.h"
#include "sandbox/session_keeper.h"

namespace moat::sandbox {

struct PrebuiltSession {
  // What it was built with: the ids, allow_without, the cgroup's limits (memory_bytes, pids)
  // and the handler. A hello's config that differs in any of them is built fresh.
  SessionConfig shape;
  ScopedCgroup cgroup;  // declared before the keeper: removed once the keeper is reaped
  std::unique_ptr<Keeper> keeper;
  UniqueFd ctl;  // moatd's end of the control socket
  SkippedLayers skipped;
  // Its own idmap user namespace (moatd as root), made for `owner` when prebuild_session was
  // given one: a hello whose workspace has that owner skips the helper's fork; any other hello
  // gets one made for its owner. Never shared with another session.
  IdmapUserns userns;
  // moatd as root: the keeper unshared the mount namespace too and its init is forked, with
  // what of the view does not depend on the workspace built (session_init.h
  // run_session_init_ahead); the init, not the keeper, takes kFinish.
  bool init_ahead = false;
  // With init_ahead: the host's read-only paths before the init bound them (ns_mount.h
  // read_only_paths_stamp); a hello that finds them otherwise gets a session built fresh.
  std::string read_only_stamp;
  UniqueFd mount_watch;  // ns_mount.h watch_mount_table, from before the init bound anything
};

// Forks the keeper and takes it as far as it can go without a workspace; with `owner` (the
// last hello's workspace owner), its idmap user namespace too.
Result<std::unique_ptr<PrebuiltSession>> prebuild_session(const SessionConfig& shape,
                                                          std::optional<IdOwner> owner = {});

// Whether the keeper still waits for its kFinish: false once it died or sent anything (an
// error), so the pool discards it rather than hand it out.
bool is_waiting(const PrebuiltSession& pre);

// Whether a hello's config can be served by a session built with `shape`: the same ids,
// allow_without, handler, cgroup limits and user cgroup, and (for a view built ahead) the same
// read_only, hostname and tmp_size, with the workspace and binds where the view can take them.
bool fits_shape(const SessionConfig& config, const SessionConfig& shape);

// Finishes `pre` for `config`, as Session::create builds a session from the start. `pre` is
// used once, whatever the outcome: a failure destroys it.
Result<std::unique_ptr<Session>> finish_session(std::unique_ptr<PrebuiltSession> pre,
                                                const SessionConfig& config);

}  // namespace moat::sandbox
