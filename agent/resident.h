// agent/resident.h: which moatd a `moat` command uses (private, --connect, system, resident),
// and reaching the person's resident moatd: connect, or start one when none answers.
#pragma once

#include <memory>
#include <string>

#include "agent/client.h"
#include "base/result.h"

namespace moat::agent {

// The three ways moatd runs (docs/moatd.md), and --connect's named socket.
enum class MoatdWay { kPrivate, kConnect, kSystem, kResident };

struct MoatdChoice {
  MoatdWay way = MoatdWay::kPrivate;
  std::string socket;  // kConnect, kSystem: the socket; kResident: $XDG_RUNTIME_DIR/moat
};

// --private -> private; --connect P -> P; `private_only` (an option or variable only a private
// moatd takes, named) -> private; a system moatd the operator configured ([system] socket of
// moatd.toml, sandbox/moatd_config.h) -> system; $XDG_RUNTIME_DIR set (absolute) -> resident;
// else private. An operator's moatd.toml that cannot be read or parsed fails the choice, naming
// the file: a broken setting must not quietly send the person elsewhere.
Result<MoatdChoice> choose_moatd(bool private_flag, const std::string& connect, bool private_only);

// $XDG_RUNTIME_DIR/moat, created 0700 when missing. Fails, naming the path and what is
// accepted, when it or $XDG_RUNTIME_DIR itself is a symlink, not a directory, not owned by this
// uid, or group or other may enter it: another user who can reach the socket or its lock, or
// swap the directory, could answer as moatd.
Result<std::string> resident_dir(const std::string& runtime_dir);

// Connects to the resident moatd at `dir`/moatd.sock. When none answers: takes an exclusive
// flock on `dir`/moatd.lock (two `moat` starting at once end on one moatd), tries again, else
// starts `moatd --socket ... --owner-only --typed-exec --idle-exit kResidentIdleExitS`
// detached (log: `dir`/moatd.log) and connects once it accepts, within kResidentStartTimeout.
Result<std::unique_ptr<MoatdClient>> connect_resident(const std::string& dir);

// A resident moatd ends after this long with no client (moatd --idle-exit).
inline constexpr int kResidentIdleExitS = 600;

}  // namespace moat::agent
