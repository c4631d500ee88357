// sandbox/session_audit.h: a session's audit log as moatd opens it, signed with the audit key
// (hello_steps.h's kAuditLog step, through SupervisorDeps::open_audit).
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>

#include "base/result.h"
#include "sandbox/supervisor_options.h"
#include "sessions/audit.h"

namespace moat::sandbox {

// A session's audit log as opened for it, and whether its checkpoints are signed.
struct OpenedAudit {
  std::unique_ptr<sessions::AuditLog> log;
  std::string signing;  // "ed25519", or "off: <why the key could not be loaded>"
};

// Opens <audit_dir>'s log for `session`, signed with the audit key (loaded or created once per
// path for the life of moatd); without the key the log is still written, unsigned. A system
// moatd's goes in the peer's folder, readable by `peer_uid` and root only
// (sessions/audit_access.h); a failure to grant that fails the open.
Result<OpenedAudit> open_session_audit(const SupervisorOptions& options, const std::string& session,
                                       const std::string& policy_hash, uid_t peer_uid);

}  // namespace moat::sandbox
