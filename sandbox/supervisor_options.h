// sandbox/supervisor_options.h: what moatd's flags set for every session it serves, below
// the supervisor and the hello's steps that read them.
#pragma once

#include <sys/types.h>

#include <map>
#include <set>
#include <string>

#include "base/host_defaults.h"
#include "policy/policy.h"
#include "sandbox/moatd_config.h"

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
  // moatd.toml, read by a moatd serving a socket: each user's quotas, and the file they came
  // from (its refusals name it).
  MoatdConfig moatd_config;
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
  // moatd --socket --owner-only --typed-exec (a resident moatd): typed_exec holds per connection
  // only when its hello asks (HelloMsg::typed_exec) and sandbox/typed_peer.h says the peer is
  // the person's own CLI; every other connection's exec frames are an agent's.
  bool typed_exec_by_peer = false;
  // moatd --owner-only (a resident moatd): a peer whose uid is not moatd's own is refused,
  // root's too (a root client has its own moatd).
  bool owner_only = false;
  // moatd --idle-exit: a --socket moatd ends once no client has been connected this long
  // (sandbox/idle_exit.h); 0 = never.
  double idle_exit_s = 0;
  // A client that takes no byte of its frames for this long is disconnected and its calls
  // are cancelled (sandbox/frame_writer.h); its calls' deadlines hold meanwhile.
  double client_stall_timeout_s = 60;
  // Test only (moatd --test-mcp-restart-backoff MS): the MCP host's first restart wait
  // (McpHostOptions::restart_backoff); 0 = its default.
  int mcp_restart_backoff_ms = 0;
  // Test only (moatd --test-resolve NAME=ADDRESS): names the network proxy resolves to these
  // addresses. Set by whoever starts moatd, never by a client or a sandbox.
  std::map<std::string, std::string> net_resolve_overrides;
};

}  // namespace moat::sandbox
