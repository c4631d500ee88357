// agent/moatd_start.h: how `moat run` and `moat sandbox exec` reach moatd: a private one
// started with the options handed through to it, the person's resident one, or a shared one
// at a socket (agent/resident.h chooses).
#pragma once

#include <CLI/CLI.hpp>

#include <memory>
#include <string>
#include <vector>

#include "agent/client.h"
#include "base/result.h"

namespace moat::agent {

// Options handed through to a private moatd.
struct MoatdPassThrough {
  std::string audit_dir;
  std::string sessions_dir;  // moat run's, for moatd to keep read-only (not a flag of its own)
  std::string system_policy_dir;
  std::string user_policy_dir;
  std::vector<std::string> allow_without;
  std::vector<std::string> policy_files;
  bool no_default_policy = false;  // leave out the built-in default policy
  bool permissive = false;         // moat sandbox exec --permissive (policy/permissive.h)
  // moat sandbox exec's own moatd: its exec frame is what the person typed (moatd
  // --typed-exec); never set by moat run, whose connection the agent loop holds.
  bool typed_exec = false;
  bool private_moatd = false;  // --private: a private moatd whatever else is configured
};
void add_moatd_pass_through(CLI::App& cmd, MoatdPassThrough& o);

// The first option given (or MOAT_* directory variable set) that only a private moatd takes;
// null when none is. Such a run uses a private moatd, not the resident one.
const char* private_only_option(const MoatdPassThrough& o);

// Connects to `socket_path` when given (--connect), else to the moatd choose_moatd picks: the
// system one, the resident one (started when none answers), or a private one (with `console`,
// one whose session has a console channel: MoatdClient::spawn_private). An option or variable
// only a private moatd takes (private_only_option) picks a private one; with `socket_path`, an
// option that sets a private moatd's policy (--permissive, --no-default-policy, the policy
// directories, --policy) is refused: a shared moatd's policy is its operator's. When the
// resident moatd cannot be used, a notice on stderr says why and a private one is started.
Result<std::unique_ptr<MoatdClient>> start_moatd(const std::string& socket_path,
                                                 const MoatdPassThrough& o, bool console = false);

}  // namespace moat::agent
