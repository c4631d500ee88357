// sandbox/supervisor.h: moatd's serving side: one connection = one agent session. The
// supervisor validates every frame, asks the policy, writes the audit log, and runs the
// calls in the session's sandbox. The agent on the other end is untrusted.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <set>
#include <string>

#include "base/host_defaults.h"
#include "base/result.h"
#include "base/unique_fd.h"
#include "policy/policy.h"
#include "sandbox/console_link.h"
#include "sandbox/listen_socket.h"

namespace moat::sandbox {

struct SupervisorOptions {
  policy::LoadOptions policy;   // workspace and headless are filled in from each hello
  std::string audit_dir;        // where per-session audit logs go
  // The Ed25519 key that signs the logs' checkpoints, created on first use (its public half
  // is written next to it as .pub); empty: <audit_dir>/audit-key.pem.
  std::string audit_key;
  // moat's session files (moat run --sessions-dir), kept read-only like every other directory
  // of moat's inside a workspace (sandbox/own_files.h); empty: the default.
  std::string sessions_dir;
  bool system_daemon = false;   // serving other users over a socket path
  uid_t unprivileged_uid = kUnprivilegedUid;
  gid_t unprivileged_gid = kUnprivilegedGid;
  std::set<std::string> allow_without;  // sandbox layers the operator lets sessions lack
  // A client that takes no byte of its frames for this long is disconnected and its calls
  // are cancelled (sandbox/frame_writer.h); its calls' deadlines hold meanwhile.
  double client_stall_timeout_s = 60;
};

// The identity of the peer, from SO_PEERCRED: the kernel's word, not the client's.
struct PeerCred {
  pid_t pid = -1;
  uid_t uid = static_cast<uid_t>(-1);
  gid_t gid = static_cast<gid_t>(-1);
};

class Supervisor {
 public:
  explicit Supervisor(SupervisorOptions options) : options_(std::move(options)) {}

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
  ConsoleRegistry consoles_;  // serve_socket's sessions waiting for their console
};

Result<PeerCred> peer_credentials(int fd);

}  // namespace moat::sandbox
