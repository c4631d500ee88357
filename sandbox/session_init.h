// sandbox/session_init.h: the session's init: pid 1 of the session's pid namespace. It builds
// the filesystem view, then reaps and forks a worker per call on moatd's request; when it
// dies, the kernel kills everything in the session.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "sandbox/protect.h"
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

// The control socket's handshake, child -> moatd: 'U' after unshare (write the id maps),
// then 'R' + describe JSON when ready or 'E' + message when a layer failed. moatd -> child:
// 'M' once the maps are written. After 'R', the child sends 'P' messages unasked, one per
// placeholder directory it created for a missing protected path (see placeholder_message);
// moatd reads them when the session ends and removes what is still empty.
struct InitContext {
  SessionConfig config;
  int ctl_fd = -1;          // SOCK_SEQPACKET to moatd; per-call requests arrive here
  int workspace_tree = -1;  // detached workspace tree (idmapped by moatd, or the keeper's clone)
};

// 'P', then dev and ino (8 bytes each, native order), then the workspace-relative path.
std::string placeholder_message(const Placeholder& p);
std::optional<Placeholder> parse_placeholder_message(std::string_view msg);

// Runs in the session's pid 1 after the namespaces exist and the ids are mapped; never
// returns. Sends 'R' or 'E' on ctl_fd.
[[noreturn]] void run_session_init(const InitContext& ctx);

}  // namespace moat::sandbox
