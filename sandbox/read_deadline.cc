// sandbox/read_deadline.cc: the hello's and each frame's deadline on a client's socket.
#include "sandbox/read_deadline.h"

#include <poll.h>

#include <algorithm>
#include <cerrno>

namespace moat::sandbox {

Result<void> ReadDeadline::wait(int fd, const FrameDecoder& decoder, bool greeted) {
  using Clock = std::chrono::steady_clock;
  // A frame's deadline starts when its first bytes are seen; the decoder's frame count
  // tells a new frame from the rest of the same one.
  if (decoder.buffered() == 0) {
    frame_.reset();
  } else if (!frame_ || decoder.frames() != frame_seq_) {
    frame_ = Clock::now() + kFrameDeadline;
    frame_seq_ = decoder.frames();
  }
  std::optional<Clock::time_point> deadline = frame_;
  const bool hello_first = !greeted && (!deadline || hello_ < *deadline);
  if (hello_first) deadline = hello_;
  for (;;) {
    int timeout_ms = -1;
    if (deadline) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(*deadline - Clock::now());
      timeout_ms = static_cast<int>(std::max<long long>(0, left.count()));
    }
    pollfd p{fd, POLLIN, 0};
    const int r = ::poll(&p, 1, timeout_ms);
    if (r > 0) return {};
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return fail(std::string());
    if (hello_first)
      return fail("no complete 'hello' within " + std::to_string(kHelloDeadline.count()) +
                  " s of connecting");
    return fail("a frame was begun but not completed within " +
                std::to_string(kFrameDeadline.count()) + " s");
  }
}

}  // namespace moat::sandbox
