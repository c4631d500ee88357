// sandbox/session_audit.cc: a session's audit log, opened and signed (see session_audit.h).
#include "sandbox/session_audit.h"

#include <map>
#include <mutex>

#include "base/log.h"
#include "sandbox/own_files.h"
#include "sessions/audit_access.h"

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

// Where the session's log goes: a system moatd's in the peer's own folder, readable by the peer
// (sessions/audit_access.h); any other moatd's in its audit folder.
Result<std::string> log_dir(const SupervisorOptions& options, uid_t peer_uid) {
  if (!options.system_daemon) return options.audit_dir;
  return sessions::make_user_audit_dir(options.audit_dir, peer_uid);
}

// The peer may read its log and the date folder that holds it, and nothing else.
Result<void> grant_peer_read(const sessions::AuditLog& log, uid_t peer_uid) {
  const std::string path = log.path();
  MOAT_TRY(sessions::grant_audit_read(path.substr(0, path.rfind('/')), peer_uid));
  return sessions::grant_audit_read(path, peer_uid);
}

}  // namespace

Result<OpenedAudit> open_session_audit(const SupervisorOptions& options, const std::string& session,
                                       const std::string& policy_hash, uid_t peer_uid) {
  auto key = audit_key(audit_key_path(options));
  // Without its key the log is still written, unsigned, and session.start says why: the
  // chain alone still shows edits, only not a rewrite by someone who can write the file.
  OpenedAudit opened{nullptr, "ed25519"};
  if (!key) {
    opened.signing = "off: " + key.error().message();
    MOAT_LOG_ERROR("audit key: %s", key.error().message().c_str());
  }
  MOAT_ASSIGN_OR_RETURN(const std::string dir, log_dir(options, peer_uid));
  // A new log: the hello drew the session's name at random (open_audit_log), so there is no
  // earlier one to look for and continue.
  MOAT_ASSIGN_OR_RETURN(
      opened.log, sessions::AuditLog::create(dir, session, policy_hash, key ? *key : nullptr));
  if (options.system_daemon) MOAT_TRY(grant_peer_read(*opened.log, peer_uid));
  return opened;
}

}  // namespace moat::sandbox
