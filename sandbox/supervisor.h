// sandbox/supervisor.h: moatd's serving side: one connection = one agent session. The
// supervisor validates every frame, asks the policy, writes the audit log, and runs the
// calls in the session's sandbox. The agent on the other end is untrusted.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <functional>
#include <memory>
#include <set>
#include <string>

#include "base/result.h"
#include "base/unique_fd.h"
#include "sandbox/connection_limit.h"
#include "sandbox/console_link.h"
#include "sandbox/listen_socket.h"
#include "sandbox/protocol.h"
#include "sandbox/supervisor_deps.h"
#include "sandbox/user_quota.h"

namespace moat::sandbox {

class Supervisor {
 public:
  explicit Supervisor(SupervisorOptions options, SupervisorDeps deps = {})
      : options_(std::move(options)), deps_(std::move(deps)) {}

  // Serves one connection until the client says bye, hangs up, or breaks the protocol.
  // Never throws; a misbehaving client gets an error frame and a closed connection.
  // `console` (a private moatd's --console-fd) is the person's channel for this session:
  // without it the session is headless, whatever its hello says.
  void serve_connection(UniqueFd conn, UniqueFd console = UniqueFd());

  // Serves each client of a claimed socket (sandbox/listen_socket.h; the peer is identified
  // by SO_PEERCRED) on its own thread until *stop.
  Result<void> serve_socket(const ListeningSocket& socket, const std::atomic<bool>& stop);

 private:
  void serve(UniqueFd conn, UniqueFd console, ConsoleRegistry* consoles);

  SupervisorOptions options_;
  SupervisorDeps deps_;
  ConsoleRegistry consoles_;  // serve_socket's sessions waiting for their console
  // What serve_socket's connections may hold before their hello, per user and in all.
  UnauthenticatedBytes unauthenticated_{kMaxUnauthenticatedBytesPerUser, kMaxUnauthenticatedBytes};
  // moatd.toml's [quota] over serve_socket's sessions: sessions counted from their hello, and
  // audit bytes per day, whose counters are kept in <audit_dir>/quota.
  UserQuotas quotas_{
      {options_.moatd_config.quota.sessions, options_.moatd_config.file},
      {options_.moatd_config.quota.audit_bytes_per_day, options_.moatd_config.file,
       options_.audit_dir + "/quota"}};
};

}  // namespace moat::sandbox
