// sandbox/binds.h: the bind mounts a hello asks for (moat sandbox exec --ro-bind, --bind),
// checked against the policy once, at hello, and held by fd from then on.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"
#include "policy/policy.h"
#include "sandbox/own_files.h"
#include "sandbox/protocol.h"
#include "sandbox/session.h"

namespace moat::sandbox {

// What a bind's target may not cover, be inside or hold: the session's own places.
struct BindPlaces {
  std::string workspace;            // bound read-write with its protected paths masked
  std::vector<std::string> system;  // the read-only system trees (ns_mount.h)
  OwnFiles own;                     // moat's own files: never bound in
  bool peer_is_moatd_user = false;  // moatd opens each source with its own rights
};

struct CheckedBinds {
  std::vector<UniqueFd> fds;       // each source, O_PATH, as it was checked
  std::vector<SessionBind> binds;  // SessionConfig::binds; fd borrowed from `fds`
};

// Each bind, in order, or the first refusal naming the bind and why:
//  - only from the user moatd runs as (a shared root moatd would lend its rights: EPERM);
//  - the source is opened with no symlink at any component (ELOOP) and must still be named by
//    its path once open (EAGAIN): the session binds this fd, so a symlink swapped in after the
//    check redirects nothing;
//  - the policy must allow reading the source and the target, and writing both for --bind; a
//    deny rule that may match below a bound directory is masked there before every call
//    (hidden: an empty file or directory; protected: read-only), or refuses the bind when it
//    cannot be written relative to it;
//  - the source may not hold, be or lie inside moat's own files;
//  - the target may not be, lie inside or hold the workspace, a system tree, /proc, /dev, /run,
//    /tmp itself or another bind's target.
Result<CheckedBinds> check_binds(const std::vector<BindMount>& binds, const policy::Policy& policy,
                                 const BindPlaces& places);

}  // namespace moat::sandbox
