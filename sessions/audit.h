// sessions/audit.h: the supervisor-owned, hash-chained audit log (one JSONL file per session).
#pragma once

#include <nlohmann/json.hpp>

#include <memory>
#include <string>

#include "base/result.h"

namespace moat::sessions {

class AuditLog {
 public:
  virtual ~AuditLog() = default;
  // Opens <dir>/<date>/<session>.jsonl for appending, creating it with mode 0600. The
  // chain's genesis is SHA-256("moat-audit/1" | session | policy_hash).
  static Result<std::unique_ptr<AuditLog>> open(const std::string& dir, const std::string& session,
                                                const std::string& policy_hash);
  // Appends one record of `type` with `fields`, adding v, seq, ts, type, session, id, prev
  // and hash; the line is written and fdatasync'd before this returns (write-ahead).
  virtual Result<void> append(const std::string& type, nlohmann::json fields) = 0;
  virtual std::string path() const = 0;
};

// The default directory: /var/log/moat for a system moatd, $XDG_STATE_HOME/moat/audit else.
std::string default_audit_dir(bool system_daemon);

}  // namespace moat::sessions
