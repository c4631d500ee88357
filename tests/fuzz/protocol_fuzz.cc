// tests/fuzz/protocol_fuzz.cc: libFuzzer target for what moatd reads from an untrusted
// client before any session exists: the frame decoder (fed in fuzzer-chosen pieces) and the
// hello/call/cancel/answer validators. Beyond "no crash", it checks the bounds moatd relies
// on: a decoded frame nests at most kMaxJsonDepth levels, and the error reply to any bad
// input fits in one frame (moatd must never abort on what it quotes).
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "sandbox/protocol.h"

namespace {

using moat::sandbox::FrameDecoder;
using nlohmann::json;

int depth_of(const json& j) {
  int deepest = 0;
  if (j.is_structured())
    for (const auto& child : j) deepest = std::max(deepest, depth_of(child));
  return j.is_structured() ? deepest + 1 : 0;
}

// The reply moatd sends for an error: it must always encode.
void check_error_reply(const std::string& message) {
  if (!moat::sandbox::try_encode_frame(moat::sandbox::error_frame(message, "protocol")))
    std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  // Byte 0: bit 0 wraps the rest in one frame (so the fuzzer reaches the validators without
  // learning the length prefix); the other bits choose where the stream is split.
  const unsigned mode = data[0];
  std::string stream(reinterpret_cast<const char*>(data + 1), size - 1);
  if (mode & 1) {
    const auto n = static_cast<std::uint32_t>(stream.size());
    std::string prefix = {static_cast<char>(n >> 24), static_cast<char>(n >> 16),
                          static_cast<char>(n >> 8), static_cast<char>(n)};
    stream = prefix + stream;
  }
  const std::size_t piece = 1 + (mode >> 1);
  FrameDecoder decoder;
  for (std::size_t off = 0; off < stream.size(); off += piece) {
    decoder.feed(std::string_view(stream).substr(off, piece));
    for (;;) {
      auto frame = decoder.next();
      if (!frame) {
        check_error_reply(frame.error().message());
        return 0;
      }
      if (!frame->has_value()) break;
      const json& m = **frame;
      if (depth_of(m) > moat::sandbox::kMaxJsonDepth) std::abort();
      auto type = moat::sandbox::validate_client_message(m, decoder.last_payload_bytes());
      if (!type) check_error_reply(type.error().message());
      auto server = moat::sandbox::validate_server_message(m);
      if (!server) check_error_reply(server.error().message());
      // A frame that decoded re-encodes (moatd echoes parts of it).
      (void)moat::sandbox::try_encode_frame(m);
    }
  }
  return 0;
}
