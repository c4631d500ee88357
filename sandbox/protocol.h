// sandbox/protocol.h: moatd's wire protocol: length-prefixed JSON frames over a Unix stream
// socket (docs/protocol.md). A frame is a 4-byte big-endian payload length, then that many
// bytes of UTF-8 JSON holding one object with a "type".
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace moat::sandbox {

inline constexpr int kProtocolVersion = 1;

// What one client can make moatd hold or echo: every bound lives here, once, and
// docs/protocol.md ("Bounds") states each. A frame that breaks one gets an error frame and
// a close for that client only.
inline constexpr std::size_t kMaxFrameBytes = 16u << 20;  // 16 MiB of payload
// Arrays and objects nested in one frame: the JSON code that walks a frame (copy, dump,
// schema checks) recurses, and 100,000 levels overflow a thread's stack.
inline constexpr int kMaxJsonDepth = 64;
inline constexpr std::size_t kMaxCallIdBytes = 128;
inline constexpr std::size_t kMaxAskIdBytes = 64;  // moatd's ask ids are 16 hex digits
// A console frame's session id (32 hex digits) and token (64 hex digits).
inline constexpr std::size_t kMaxConsoleFieldBytes = 128;
inline constexpr std::size_t kMaxToolNameBytes = 128;
// hello.workspace and a call's arguments.path: PATH_MAX, the longest path the kernel takes.
inline constexpr std::size_t kMaxPathBytes = 4096;
// A call's arguments.command: MAX_ARG_STRLEN, the longest argument execve takes (bash -c).
inline constexpr std::size_t kMaxCommandBytes = 128u << 10;
// A whole answer frame (its fields are an ask id and two words).
inline constexpr std::size_t kMaxAnswerBytes = 4096;
// What an error frame's message quotes; longer messages are cut.
inline constexpr std::size_t kMaxErrorMessageBytes = 4096;
// Calls running at once on one connection (each holds a thread and its arguments), and
// the bytes of those calls' frames together.
inline constexpr std::size_t kMaxConcurrentCalls = 64;
inline constexpr std::size_t kMaxRunningCallBytes = 64u << 20;
// Connections a shared moatd (--socket) serves at once, per peer uid and in all: a
// connection beyond one gets an error frame and is closed (sandbox/connection_limit.h).
inline constexpr std::size_t kMaxConnectionsPerUser = 64;
inline constexpr std::size_t kMaxConnections = 1024;
// From connect to a complete hello; from a frame's first byte to its last.
inline constexpr std::chrono::seconds kHelloDeadline{10};
inline constexpr std::chrono::seconds kFrameDeadline{10};
// Frames moatd has queued for one client and the client has not read, across all its calls:
// past this the client is disconnected rather than let grow moatd (sandbox/frame_writer.h).
inline constexpr std::size_t kMaxQueuedBytes = 64u << 20;

// Encodes one frame, or fails when its payload would exceed kMaxFrameBytes (moatd, whose
// replies may echo what a client sent, answers that with a short error instead).
Result<std::string> try_encode_frame(const nlohmann::json& message);
// The same for a caller that keeps payloads under kMaxFrameBytes; an oversized one is a bug.
std::string encode_frame(const nlohmann::json& message);

// Sends one frame whole on a stream socket; MSG_NOSIGNAL, so a peer that hung up is an error
// here, not a SIGPIPE.
Result<void> send_frame(int fd, const nlohmann::json& message);

// Incremental decoder: feed it bytes as they arrive, however they are split; it yields
// whole frames. The first error is sticky: after it, the stream cannot be resynchronised
// and the connection must be closed.
class FrameDecoder {
 public:
  void feed(std::string_view bytes);
  // The next complete frame parsed as a JSON object, nullopt when more bytes are needed, or
  // an error naming the problem ("frame of 20000000 bytes exceeds the 16777216-byte limit",
  // "malformed JSON at byte 12: ...", "frame is not a JSON object", "frame nests arrays
  // and objects deeper than 64 levels").
  Result<std::optional<nlohmann::json>> next();
  std::size_t buffered() const { return buf_.size() - pos_; }
  // The payload size of the frame next() returned last.
  std::size_t last_payload_bytes() const { return last_payload_; }
  // How many frames next() has returned: a change means a new frame has begun.
  std::uint64_t frames() const { return frames_; }

 private:
  std::string buf_;
  std::size_t pos_ = 0;
  std::size_t last_payload_ = 0;
  std::uint64_t frames_ = 0;
  std::optional<Error> error_;
};

// The message types, and the fields each must carry (validated on receipt).
// kConsole opens a console connection (the person's channel: docs/protocol.md); kAttached
// is moatd's reply to it.
enum class ClientMessage { kHello, kCall, kCancel, kAnswer, kBye, kConsole };
enum class ServerMessage { kWelcome, kResult, kProgress, kAsk, kError, kBye, kAttached };

// Validates a frame sent by a client: a known type, every required field with the right
// JSON type, and every field moatd echoes (workspace, tool, id, ask, arguments.path,
// arguments.command) within its bound, as is an answer frame's payload_bytes. Returns the
// type, or an error naming the field and what was expected (never quoting its value).
Result<ClientMessage> validate_client_message(const nlohmann::json& m,
                                              std::size_t payload_bytes = 0);
// The same for frames the server sends (the client checks them too: it trusts nothing).
Result<ServerMessage> validate_server_message(const nlohmann::json& m);

// s cut to at most max bytes at a UTF-8 boundary, "..." appended when cut: how a reply or
// a record quotes a client's text without growing with it.
std::string cut_utf8(std::string s, std::size_t max);

// An error frame whose message is cut to kMaxErrorMessageBytes (at a UTF-8 boundary), so
// that quoting a client's input can never make the reply exceed the frame limit.
nlohmann::json error_frame(std::string message, const std::string& code,
                           const std::string& id = "");

}  // namespace moat::sandbox
