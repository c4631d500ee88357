// sandbox/session_init.h: the session's init: pid 1 of the session's pid namespace. It builds
// the filesystem view, then reaps and forks a worker per call on moatd's request; when it
// dies, the kernel kills everything in the session.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "sandbox/protect.h"
#include "sandbox/seccomp_policy.h"
#include "sandbox/session.h"

namespace moat::sandbox {

// Messages on a call's channel, init -> moatd. kStarted carries the worker's pidfd.
enum class ChannelMsg : std::int32_t { kStarted = 1, kExited = 2, kFailed = 3 };
struct ChannelRecord {
  ChannelMsg type;
  std::int32_t value;  // kStarted: pid in the session; kExited: wait status; kFailed: errno
};

// Bytes moatd sends on a call's channel: kill the worker's process group. EOF means the same.
inline constexpr char kKillRequest = 'k';

// The control socket's records, each opening with one of these bytes. The handshake, in
// order: kUnshared, kMapsWritten, then kReady or kError. After kReady the child sends
// kPlaceholder records unasked, one per placeholder directory it created for a missing
// protected path (see placeholder_message); moatd reads them when the session ends and removes
// what is still empty. moatd starts each call with a kCall record.
enum class CtlMsg : char {
  kUnshared = 'U',     // child -> moatd: the namespaces exist; write the id maps
  kMapsWritten = 'M',  // moatd -> child: the maps are written; become root in the namespace
  kReady = 'R',        // child -> moatd, + describe JSON: the session is up
  kError = 'E',        // child -> moatd, + message: a layer failed (the child then exits)
  kPlaceholder = 'P',  // child -> moatd, + placeholder (see placeholder_message)
  kCall = 'c',         // moatd -> child, with the call's channel, status and io fds attached
  // moatd -> child, with the call's channel and status fds and the command's stdin, stdout
  // and stderr (ExecSpec::stdio) attached.
  kCallStdio = 's',
};
inline constexpr char ctl_byte(CtlMsg m) { return static_cast<char>(m); }
struct InitContext {
  SessionConfig config;
  int ctl_fd = -1;          // SOCK_SEQPACKET to moatd; per-call requests arrive here
  int workspace_tree = -1;  // detached workspace tree (idmapped by moatd, or the keeper's clone)
  // The seccomp filter moatd compiled ahead (precompiled_filter); null: the init compiles it.
  std::shared_ptr<const BpfProgram> filter;
};

// kPlaceholder, then dev and ino (8 bytes each, native order), then the workspace-relative path.
std::string placeholder_message(const Placeholder& p);
std::optional<Placeholder> parse_placeholder_message(std::string_view msg);

// Runs in the session's pid 1 after the namespaces exist and the ids are mapped; never
// returns. Sends kReady or kError on ctl_fd.
[[noreturn]] void run_session_init(const InitContext& ctx);

}  // namespace moat::sandbox
