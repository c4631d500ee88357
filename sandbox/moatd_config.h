// sandbox/moatd_config.h: moatd.toml, the operator's settings for a system moatd (one file,
// /etc/moat/moatd.toml by default): the socket `moat` uses, and the quotas
// all of one user's sessions share. Read by moatd and by moat.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/moat_dirs.h"
#include "base/result.h"

namespace moat::sandbox {

// The operator's file, like the system layer; MOAT_MOATD_CONFIG names another (tests, an
// operator's own path). A shared moatd reads its own environment's, never a client's.
inline constexpr const char* kMoatdConfig = "/etc/moat/moatd.toml";
inline std::string moatd_config_path() {
  return dirs::or_default(dirs::nonempty_env("MOAT_MOATD_CONFIG"), kMoatdConfig);
}

// [quota]: per local user (the peer's uid from SO_PEERCRED), over all of that user's sessions
// on this moatd at once. 0: no quota.
struct UserQuota {
  std::uint64_t sessions = 0;  // sessions open at once, each counted from its hello
  // audit_bytes_per_day: a size ("1G"): the bytes of audit records all of the user's sessions
  // append in one UTC day (sandbox/user_quota.h AuditBytesQuota).
  std::uint64_t audit_bytes_per_day = 0;
  // The sum over the user's sessions, in a parent cgroup of theirs (sandbox/cgroup.h); each
  // session's own [resources] ceilings still hold (the tighter wins).
  std::uint64_t memory_bytes = 0;  // memory: a size ("8G", "512MiB", bytes)
  std::uint64_t pids = 0;          // pids: processes and threads at once
};

struct MoatdConfig {
  // [system] socket: the system moatd's socket, which moat uses when it answers; empty: none.
  std::string socket;
  // [system] audit_dir: where the system moatd writes audit logs, one folder per user
  // (sessions/audit_access.h), and where `moat audit show` finds the user's; empty: /var/log/moat.
  std::string audit_dir;
  UserQuota quota;
  std::string file;  // where it was read from, named by the quota's refusals; empty: defaults
};

// Parses moatd.toml's text. Every error is "file:line:col: key: what is accepted"; unknown
// tables and keys are errors (a typo must not leave a quota unset).
Result<MoatdConfig> parse_moatd_config(std::string_view text, const std::string& file);

// Reads `path`: a file that does not exist is the defaults (no system socket, no quota); one
// that cannot be read, or does not parse, is an error.
Result<MoatdConfig> load_moatd_config(const std::string& path);

// [system] socket of the operator's file (moatd_config_path()): the system moatd moat uses
// (agent/resident.h configured_system_moatd); "" when none is configured.
Result<std::string> configured_system_socket();

}  // namespace moat::sandbox
