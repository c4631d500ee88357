// sandbox/read_deadline.h: how long moatd waits for a client's bytes: a complete hello within
// kHelloDeadline of connecting, and a begun frame completed within kFrameDeadline (protocol.h),
// so a client that trickles bytes cannot hold a connection, its thread and its buffer.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "base/result.h"
#include "sandbox/protocol.h"

namespace moat::sandbox {

class ReadDeadline {
 public:
  ReadDeadline() : hello_(std::chrono::steady_clock::now() + kHelloDeadline) {}

  // Waits until `fd` is readable. Fails with the error frame's message when the hello (not
  // yet `greeted`) or the frame `decoder` has begun misses its deadline, and with an empty
  // message when the socket fails.
  Result<void> wait(int fd, const FrameDecoder& decoder, bool greeted);

 private:
  std::chrono::steady_clock::time_point hello_;
  std::optional<std::chrono::steady_clock::time_point> frame_;
  std::uint64_t frame_seq_ = 0;
};

}  // namespace moat::sandbox
