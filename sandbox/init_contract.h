// sandbox/init_contract.h: what moatd and the session's init (session_init.h) say to each
// other, and what a worker tells moatd: the control socket's records, a call's request, the
// records on a call's channel and on its status socket. One struct or enum per record, one
// encoder and one decoder each; a decoding error names the field. docs/architecture.md has
// the table.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "sandbox/protect.h"

namespace moat::sandbox {

// The control socket's records (SOCK_SEQPACKET, one record per message), each opening with
// one of these bytes. The handshake, in order: kUnshared, kMapsWritten, then kReady or
// kError. After kReady the child sends kPlaceholder records unasked, one per placeholder
// directory it created for a missing protected path (see placeholder_message); moatd reads
// them when the session ends and removes what is still empty. moatd starts each call with a
// kCall or kCallStdio record, then sends its CallRequest on the call's channel.
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
  // moatd -> a pooled keeper, + the session's config (session_pool_config.h), with the
  // workspace, its tree (or not) and each bind's fd attached: the hello it now serves.
  kFinish = 'F',
};
inline constexpr char ctl_byte(CtlMsg m) { return static_cast<char>(m); }

// The fds attached to a kCall record (channel, status, io) and to a kCallStdio one (channel,
// status, stdin, stdout, stderr).
inline constexpr std::size_t kCallFds = 3;
inline constexpr std::size_t kCallStdioFds = 5;

// kPlaceholder, then dev and ino (8 bytes each, native order), then the workspace-relative
// path (a bind's: its sandbox path, absolute).
std::string placeholder_message(const Placeholder& p);
std::optional<Placeholder> parse_placeholder_message(std::string_view msg);

// What a call runs in its worker.
enum class WorkerKind { kExec, kHandler, kCreateFile };

// A call's own ceilings below the session's (an MCP server's `resources`, docs/mcp.md), each
// 0 for the session's. They only narrow: the init takes the smaller of each and the session's
// Limits (rlimits.h narrowed), so a request cannot widen what the session allows.
struct CallLimits {
  std::uint64_t cpu_time_s = 0;    // RLIMIT_CPU
  std::uint64_t memory_bytes = 0;  // RLIMIT_AS
  std::uint64_t pids = 0;          // RLIMIT_NPROC
  std::uint64_t file_size = 0;     // RLIMIT_FSIZE
  std::uint64_t open_files = 0;    // RLIMIT_NOFILE
  bool operator==(const CallLimits&) const = default;
};

// moatd -> init on the call's channel, once: a 4-byte length (native order), then the
// request as JSON ("kind", "argv", "cwd", "env", "terminal", "limits", "path", "skip"), lossless
// (base/byte_strings.h): argv and paths that are not UTF-8 arrive with their exact bytes.
struct CallRequest {
  WorkerKind kind = WorkerKind::kExec;     // "kind": "exec", "handler" or "create"
  std::vector<std::string> argv;           // exec: not empty
  std::string cwd;                         // exec: sandbox path; empty = the workspace
  std::map<std::string, std::string> env;  // exec: set over the session's environment
  bool terminal = false;  // exec with stdio: the first tty among fds 0-2 becomes the ctty
  // exec: "limits" {"cpu_time_s": N, ...}, only the keys that are set, each a positive integer
  CallLimits limits;
  std::string path;       // create: the sandbox path of the file to create
  std::string skip;       // tests only: a worker step left out (worker.h step_name)

  std::string encode() const;
  static Result<CallRequest> decode(std::string_view text);
};

// A request longer than this is refused (the init reads it whole before a fork).
inline constexpr std::size_t kMaxCallRequestBytes = 64u << 20;

// Writes the request's frame on the call's channel.
Result<void> send_call_request(int channel, const CallRequest& request);
// Reads one frame (within the channel's receive timeout) and decodes it.
Result<CallRequest> read_call_request(int channel);

// Records on a call's channel, init -> moatd. kStarted carries the worker's pidfd, and its
// credentials name the worker (or the init, when it could not: moatd then reads the pidfd).
enum class ChannelMsg : std::int32_t { kStarted = 1, kExited = 2, kFailed = 3 };
struct ChannelRecord {
  ChannelMsg type;
  std::int32_t value;  // kStarted: pid in the session; kExited: wait status; kFailed: errno
};

// Bytes moatd sends on a call's channel: kill the worker's process group. EOF means the same.
inline constexpr char kKillRequest = 'k';

// The record a failing worker step writes on the call's status socket, worker -> moatd.
// EOF without a record = the worker reached its exec (or handler). An exec worker first sends
// {kExecWatch, 0} with the exec watch's listener and its exec gate attached (worker.cc).
struct StatusRecord {
  std::int32_t step;  // a Step (worker.h)
  std::int32_t err;   // an errno
};

}  // namespace moat::sandbox
