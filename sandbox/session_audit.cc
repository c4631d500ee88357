// sandbox/session_audit.cc: a session's audit log, opened and signed (see session_audit.h).
#include "sandbox/session_audit.h"

#include <map>
#include <mutex>

#include "base/log.h"
#include "sandbox/own_files.h"

namespace moat::sandbox {
namespace {

// The checkpoint key, loaded (or created) once per path for the life of moatd.
Result<std::shared_ptr<const sessions::AuditKey>> audit_key(const std::string& path) {
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<const sessions::AuditKey>> keys;
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = keys.find(path); it != keys.end()) return it->second;
  MOAT_ASSIGN_OR_RETURN(std::unique_ptr<sessions::AuditKey> key,
                        sessions::AuditKey::load_or_create(path));
  std::shared_ptr<const sessions::AuditKey> shared = std::move(key);
  keys[path] = shared;
  return shared;
}

}  // namespace

Result<OpenedAudit> open_session_audit(const SupervisorOptions& options, const std::string& session,
                                       const std::string& policy_hash) {
  auto key = audit_key(audit_key_path(options));
  // Without its key the log is still written, unsigned, and session.start says why: the
  // chain alone still shows edits, only not a rewrite by someone who can write the file.
  OpenedAudit opened{nullptr, "ed25519"};
  if (!key) {
    opened.signing = "off: " + key.error().message();
    MOAT_LOG_ERROR("audit key: %s", key.error().message().c_str());
  }
  MOAT_ASSIGN_OR_RETURN(opened.log, sessions::AuditLog::open(options.audit_dir, session,
                                                             policy_hash, key ? *key : nullptr));
  return opened;
}

}  // namespace moat::sandbox
