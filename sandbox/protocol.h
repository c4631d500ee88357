// sandbox/protocol.h: moatd's wire protocol: length-prefixed JSON frames over a Unix stream
// socket (docs/protocol.md). A frame is a 4-byte big-endian payload length, then that many
// bytes of UTF-8 JSON holding one object with a "type".
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace moat::sandbox {

inline constexpr int kProtocolVersion = 1;
inline constexpr std::size_t kMaxFrameBytes = 16u << 20;  // 16 MiB of payload

// Encodes one frame. The caller keeps payloads under kMaxFrameBytes (results are truncated
// by the tools long before that); an oversized payload is a bug.
std::string encode_frame(const nlohmann::json& message);

// Incremental decoder: feed it bytes as they arrive, however they are split; it yields
// whole frames. The first error is sticky: after it, the stream cannot be resynchronised
// and the connection must be closed.
class FrameDecoder {
 public:
  void feed(std::string_view bytes);
  // The next complete frame parsed as a JSON object, nullopt when more bytes are needed, or
  // an error naming the problem ("frame of 20000000 bytes exceeds the 16777216-byte limit",
  // "malformed JSON at byte 12: ...", "frame is not a JSON object").
  Result<std::optional<nlohmann::json>> next();
  std::size_t buffered() const { return buf_.size() - pos_; }

 private:
  std::string buf_;
  std::size_t pos_ = 0;
  std::optional<Error> error_;
};

// The message types, and the fields each must carry (validated on receipt).
enum class ClientMessage { kHello, kCall, kCancel, kAnswer, kBye };
enum class ServerMessage { kWelcome, kResult, kProgress, kAsk, kError, kBye };

// Validates a frame sent by a client: a known type and every required field with the
// right JSON type. Returns the type, or an error naming the field and what was expected.
Result<ClientMessage> validate_client_message(const nlohmann::json& m);
// The same for frames the server sends (the client checks them too: it trusts nothing).
Result<ServerMessage> validate_server_message(const nlohmann::json& m);

}  // namespace moat::sandbox
