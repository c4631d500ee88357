// sessions/paths.cc: where session files and audit logs live by default.
#include <cstdlib>
#include <string>

#include "sessions/audit.h"
#include "sessions/store.h"

namespace moat::sessions {
namespace {

std::string state_home() {
  if (const char* x = std::getenv("XDG_STATE_HOME"); x != nullptr && *x == '/') return x;
  const char* home = std::getenv("HOME");
  return std::string(home != nullptr ? home : "/tmp") + "/.local/state";
}

}  // namespace

std::string default_sessions_dir() {
  if (const char* d = std::getenv("MOAT_SESSIONS_DIR"); d != nullptr && *d != '\0') return d;
  return state_home() + "/moat/sessions";
}

std::string default_audit_dir(bool system_daemon) {
  if (const char* d = std::getenv("MOAT_AUDIT_DIR"); d != nullptr && *d != '\0') return d;
  if (system_daemon) return "/var/log/moat";
  return state_home() + "/moat/audit";
}

}  // namespace moat::sessions
