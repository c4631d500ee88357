// sandbox/frame_writer.cc: the per-client frame writer (see frame_writer.h).
#include "sandbox/frame_writer.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>

#include "base/log.h"

namespace moat::sandbox {

using Clock = std::chrono::steady_clock;

FrameWriter::FrameWriter(int fd, std::chrono::milliseconds stall_timeout)
    : fd_(fd), stall_timeout_(stall_timeout), thread_([this] { loop(); }) {}

FrameWriter::~FrameWriter() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void FrameWriter::push(std::string frame) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (disconnected_) return;
    // Nothing queued and nothing being written: the frame goes out now, from this thread, as
    // far as the socket takes it without waiting (a result need not wake the writer thread);
    // what it does not take is queued, in order, for the writer.
    if (queue_.empty() && !writing_) {
      const ssize_t n = ::send(fd_, frame.data(), frame.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n == static_cast<ssize_t>(frame.size())) return;
      if (n > 0) frame.erase(0, static_cast<std::size_t>(n));
    }
    if (queued_bytes_ + frame.size() > kMaxQueuedBytes) {
      disconnect_locked("more than kMaxQueuedBytes of frames unread");
      return;
    }
    queued_bytes_ += frame.size();
    queue_.push_back(std::move(frame));
  }
  cv_.notify_all();
}

bool FrameWriter::disconnected() const {
  std::lock_guard<std::mutex> lock(mu_);
  return disconnected_;
}

void FrameWriter::disconnect_locked(const char* why) {
  if (disconnected_) return;
  disconnected_ = true;
  queue_.clear();
  queued_bytes_ = 0;
  MOAT_LOG_WARN("client disconnected: %s", why);
  ::shutdown(fd_, SHUT_RDWR);
}

void FrameWriter::loop() {
  for (;;) {
    std::string frame;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return !queue_.empty() || stopping_ || disconnected_; });
      if (queue_.empty()) return;  // stopping (or disconnected) with nothing left to write
      frame = std::move(queue_.front());
      queue_.pop_front();
      writing_ = true;
    }
    const bool written = write_frame(frame);
    {
      std::lock_guard<std::mutex> lock(mu_);
      writing_ = false;
      queued_bytes_ -= std::min(queued_bytes_, frame.size());
      if (!written) disconnect_locked("it read nothing for the stall timeout, or hung up");
    }
    cv_.notify_all();  // close() waits for the queue to empty
  }
}

void FrameWriter::close() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return (queue_.empty() && !writing_) || disconnected_; });
  disconnected_ = true;  // push() drops what comes after
  ::shutdown(fd_, SHUT_RDWR);
}

// Non-blocking sends, each preceded by a poll whose timeout restarts whenever the client
// takes a byte: a slow reader is served, one that stopped is not waited for past the limit.
bool FrameWriter::write_frame(const std::string& frame) {
  std::size_t off = 0;
  auto last_progress = Clock::now();
  while (off < frame.size()) {
    // MSG_NOSIGNAL: a client that hung up must not kill moatd with SIGPIPE.
    ssize_t n = ::send(fd_, frame.data() + off, frame.size() - off, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      off += static_cast<std::size_t>(n);
      last_progress = Clock::now();
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return false;  // hung up
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        last_progress + stall_timeout_ - Clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd_, POLLOUT, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) < 0 && errno != EINTR) return false;
  }
  return true;
}

}  // namespace moat::sandbox
