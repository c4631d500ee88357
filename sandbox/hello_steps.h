// sandbox/hello_steps.h: the steps that turn a client's hello into a session, each one check
// with one kind of failure (the error frame's code), in the order supervisor.cc runs them.
#pragma once

#include <nlohmann/json.hpp>

#include <future>

#include "base/result.h"
#include "sandbox/git_identity.h"
#include "sandbox/listen_socket.h"
#include "sandbox/protocol.h"
#include "sandbox/session_state.h"
#include "sandbox/supervisor_deps.h"

namespace moat::sandbox {

enum class HelloStep {
  kVersion,       // the protocol version is one this moatd speaks
  kWorkspace,     // the workspace is an existing directory the peer owns
  kPolicy,        // the layers load, and the project layer is the workspace's own
  kMode,          // the organisation's constraints allow this session's mode
  kAuditLog,      // the session's audit log opens (required only if the policy says so)
  kOwnFiles,      // moat's own files inside the workspace can be kept out of reach
  kBinds,         // each bind asked for (--ro-bind, --bind) is one the policy allows
  kNetwork,       // the network asked for (--network) is one the policy grants
  kSession,       // the sandbox (namespaces, mounts, init) is set up
  kFileIndex,     // the workspace's files are indexed (never fails: files_changed says why)
  kSessionStart,  // session.start is on disk
};

// How a failed step is answered: the error frame's code and the prefix of its message
// (the step's error says the rest), and whether a session.refused record is written.
struct HelloStepInfo {
  const char* name;
  const char* code;          // protocol, workspace, policy, audit or sandbox
  const char* frame_prefix;  // "policy: ", ...
  bool audit_refusal;
};
const HelloStepInfo& hello_step_info(HelloStep step);

// Where a session's console comes from: none (a private moatd started without one), the
// private moatd's socketpair, or a token in the welcome for a console to attach with.
enum class ConsoleSource { kNone, kSocketpair, kToken };

// The steps' shared state; each step returns its failure and leaves the connection to
// answer it. The steps run in the order of HelloStep, each after the previous succeeded.
class HelloSteps {
 public:
  HelloSteps(const SupervisorOptions& options, const SupervisorDeps& deps, const PeerCred& peer,
             const HelloMsg& hello, ConsoleSource console);

  Result<void> check_version();
  Result<void> resolve_workspace();
  Result<void> load_policy();
  Result<void> check_mode();
  Result<void> open_audit_log();
  Result<void> protect_own_files();
  Result<void> check_binds();
  Result<void> check_network();
  Result<void> create_session();
  Result<void> start_net_proxy();
  Result<void> index_files();
  Result<void> record_session_start();

  // What the steps built (the session once every step succeeded).
  SessionState& state() { return state_; }
  // {"uid","gid","pid"} of the peer, as session records name it.
  nlohmann::json peer_json() const;

 private:
  void grant_tools();
  void start_git_identity();
  GitIdentity take_git_identity();

  const SupervisorOptions& options_;
  const SupervisorDeps& deps_;
  const PeerCred peer_;
  const HelloMsg& hello_;
  const ConsoleSource console_;
  SessionState state_;
  SessionConfig config_;  // filled by the steps before kSession
  std::vector<std::string> own_inside_;  // moat's own paths inside the workspace, relative
  std::vector<UniqueFd> bind_fds_;       // the binds' sources as checked, until kSession
  nlohmann::json file_index_;            // session.start's account of the index
  bool reads_git_identity_ = false;      // moatd runs as the peer: its identity goes in
  std::future<GitIdentity> git_identity_;  // read beside the steps, taken by kSession
};

}  // namespace moat::sandbox
