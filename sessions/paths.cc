// sessions/paths.cc: where session files and audit logs live by default (base/moat_dirs.h).
#include <string>

#include "base/moat_dirs.h"
#include "sessions/audit.h"
#include "sessions/store.h"

namespace moat::sessions {

std::string default_sessions_dir() { return dirs::sessions(); }

std::string default_audit_dir(bool system_daemon) { return dirs::audit(system_daemon); }

}  // namespace moat::sessions
