// base/stop_flags.h: stops. A stop is a std::stop_token: a waiter registers a std::stop_callback
// that wakes it (a condition variable, an eventfd, curl_multi_wakeup), so it hears the stop at
// once instead of at its next tick. Two things here stand at the edges where a stop still
// arrives as a bare flag:
//  - FlagStop: a std::stop_source raised by a std::atomic<bool> that a caller raises without
//    waking anyone (a signal handler can only store it). Its one tick is base/ticks.h's
//    kBareFlag; it goes when the caller hands a std::stop_token instead.
//  - StopFlags: the flags that stop a running command, read as one by the runner's poll.
#pragma once

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <stop_token>
#include <thread>

#include "base/ticks.h"

namespace moat {

class FlagStop {
 public:
  // Watches `flag` (null: never raised by it) until destroyed.
  explicit FlagStop(const std::atomic<bool>* flag) {
    if (flag == nullptr) return;
    if (flag->load()) {
      source_.request_stop();
      return;
    }
    watch_ = std::jthread([this, flag](std::stop_token done) { watch(*flag, done); });
  }
  FlagStop(const FlagStop&) = delete;
  FlagStop& operator=(const FlagStop&) = delete;

  std::stop_token token() const { return source_.get_token(); }
  std::stop_source& source() { return source_; }

 private:
  void watch(const std::atomic<bool>& flag, const std::stop_token& done) {
    std::mutex mu;
    std::condition_variable_any cv;
    std::unique_lock<std::mutex> lock(mu);
    while (!flag.load() && !source_.stop_requested()) {
      cv.wait_for(lock, done, ticks::kBareFlag, [] { return false; });
      if (done.stop_requested()) return;
    }
    source_.request_stop();
  }

  std::stop_source source_;
  std::jthread watch_;  // declared last: joined before source_ goes
};

class StopFlags {
 public:
  // Implicit from one flag (or nullptr: never raised), so a single flag reads as before.
  StopFlags(const std::atomic<bool>* first = nullptr,  // NOLINT(google-explicit-constructor)
            const std::atomic<bool>* second = nullptr)
      : first_(first), second_(second) {}

  bool raised() const {
    return (first_ != nullptr && first_->load()) || (second_ != nullptr && second_->load());
  }

 private:
  const std::atomic<bool>* first_;
  const std::atomic<bool>* second_;
};

}  // namespace moat
