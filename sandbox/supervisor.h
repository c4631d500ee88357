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

#include "base/host_defaults.h"
#include "base/result.h"
#include "base/unique_fd.h"
#include "policy/policy.h"
#include "sandbox/connection_limit.h"
#include "sandbox/console_link.h"
#include "sandbox/listen_socket.h"
#include "sandbox/protocol.h"
#include "sandbox/session.h"
#include "sessions/audit.h"

namespace moat::sandbox {

struct SupervisorOptions {
  policy::LoadOptions policy;  // workspace and headless are filled in from each hello
  std::string audit_dir;       // where per-session audit logs go
  // The Ed25519 key that signs the logs' checkpoints, created on first use (its public half
  // is written next to it as .pub); empty: <audit_dir>/audit-key.pem.
  std::string audit_key;
  // moat's session files (moat run --sessions-dir), kept read-only like every other directory
  // of moat's inside a workspace (sandbox/own_files.h); empty: the default.
  std::string sessions_dir;
  bool system_daemon = false;  // serving other users over a socket path
  uid_t unprivileged_uid = kUnprivilegedUid;
  gid_t unprivileged_gid = kUnprivilegedGid;
  std::set<std::string> allow_without;  // sandbox layers the operator lets sessions lack
  // moatd --permissive: every session's commands are allowed but the organisation's and a
  // --policy file's denies and asks (policy/permissive.h); mode "permissive".
  bool permissive = false;
  // moatd --typed-exec (private moatd only): the person's own CLI (`moat sandbox exec`, a batch
  // check) holds the connection, so an exec frame's command line is what the person typed and
  // is judged by Policy::decide_typed. Only the one who starts moatd can say so: a client field
  // would let a compromised agent loop, which also sends exec frames, claim it.
  bool typed_exec = false;
  // A client that takes no byte of its frames for this long is disconnected and its calls
  // are cancelled (sandbox/frame_writer.h); its calls' deadlines hold meanwhile.
  double client_stall_timeout_s = 60;
  // Test only (moatd --test-resolve NAME=ADDRESS): names the network proxy resolves to these
  // addresses. Set by whoever starts moatd, never by a client or a sandbox.
  std::map<std::string, std::string> net_resolve_overrides;
};

// A session's audit log as opened for it, and whether its checkpoints are signed.
struct OpenedAudit {
  std::unique_ptr<sessions::AuditLog> log;
  std::string signing;  // "ed25519", or "off: <why the key could not be loaded>"
};

// Opens <audit_dir>'s log for `session`, signed with the audit key (loaded or created once per
// path for the life of moatd); without the key the log is still written, unsigned.
Result<OpenedAudit> open_session_audit(const SupervisorOptions& options, const std::string& session,
                                       const std::string& policy_hash);

// What a session is built from, passed in so the supervisor can be tested with fakes on a
// machine without namespaces (ninja's DiskInterface); the defaults are the real ones.
struct SupervisorDeps {
  std::function<Result<std::unique_ptr<policy::Policy>>(const policy::LoadOptions&)> load_policy =
      &policy::Policy::load;
  std::function<Result<OpenedAudit>(const SupervisorOptions&, const std::string& session,
                                    const std::string& policy_hash)>
      open_audit = &open_session_audit;
  std::function<Result<std::unique_ptr<Session>>(const SessionConfig&)> create_session =
      &Session::create;
};

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
};

}  // namespace moat::sandbox
