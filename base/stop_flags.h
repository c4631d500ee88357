// base/stop_flags.h: stops. A stop is a std::stop_token: a waiter registers a std::stop_callback
// that wakes it (a condition variable, an eventfd, curl_multi_wakeup), so it hears the stop at
// once instead of at its next tick. Here:
//  - RunCancel: a run's cancel, raised by the person and renewed for the next run.
//  - SignalStop: a signal's edge: its handler writes an eventfd (all a handler may do), and a
//    thread blocked reading it acts at once (no tick).
//  - CallCancel: one call's cancel: a flag, an eventfd a poll loop includes and a stop_token,
//    all raised at once by raise().
//  - StopFlags: the flags that stop a running command, read as one by the runner's poll, and
//    the eventfd that wakes that poll when they are raised.
#pragma once

#include <signal.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <functional>
#include <mutex>
#include <stop_token>
#include <thread>
#include <utility>

#include "base/unique_fd.h"

namespace moat {

// The person's cancel of a run (Ctrl-C through SignalStop, an RPC abort): request() stops the
// current token, whose waiters' stop_callbacks run at once on the requesting thread. A
// process that runs again (moat run --rpc, one run per prompt) renews it between runs.
class RunCancel {
 public:
  void request() {
    std::stop_source s;
    {
      std::lock_guard<std::mutex> lock(mu_);
      s = source_;
    }
    s.request_stop();  // outside mu_: the callbacks it runs may take their own locks
  }
  // The next run starts uncancelled: a stop requested before now is forgotten.
  void renew() {
    std::lock_guard<std::mutex> lock(mu_);
    if (source_.stop_requested()) source_ = std::stop_source();
  }
  std::stop_token token() const {
    std::lock_guard<std::mutex> lock(mu_);
    return source_.get_token();
  }

 private:
  mutable std::mutex mu_;
  std::stop_source source_;
};

// Calls `on_signal` on a thread of its own each time `sig` arrives, while it lives: the
// handler only writes an eventfd (write(2) is async-signal-safe), and the thread is blocked
// in read(2) on it, with no timeout. One per signal number at a time. When the eventfd cannot
// be made, the signal keeps its disposition (watching() is false).
class SignalStop {
 public:
  SignalStop(int sig, std::function<void()> on_signal)
      : sig_(sig), on_signal_(std::move(on_signal)), fd_(::eventfd(0, EFD_CLOEXEC)) {
    if (!fd_.valid()) return;
    fd_of(sig_).store(fd_.get() + 1);
    thread_ = std::thread([this] { watch(); });
    struct sigaction sa {};
    sa.sa_handler = on_signal_caught;
    sa.sa_flags = SA_RESTART;
    ::sigaction(sig_, &sa, &previous_);
  }
  SignalStop(const SignalStop&) = delete;
  SignalStop& operator=(const SignalStop&) = delete;
  ~SignalStop() {
    if (!fd_.valid()) return;
    ::sigaction(sig_, &previous_, nullptr);
    fd_of(sig_).store(0);
    closing_.store(true);
    post(fd_.get());
    thread_.join();
  }

  bool watching() const { return fd_.valid(); }

 private:
  // The eventfd + 1 of the SignalStop watching `sig`, 0 when none does (the array starts zero).
  static std::atomic<int>& fd_of(int sig) {
    static std::atomic<int> fds[NSIG];
    return fds[sig];
  }
  static void post(int fd) {
    const std::uint64_t one = 1;
    (void)!::write(fd, &one, sizeof one);
  }
  static void on_signal_caught(int sig) {
    const int saved = errno;
    if (const int fd = fd_of(sig).load(); fd > 0) post(fd - 1);
    errno = saved;
  }
  void watch() {
    for (;;) {
      std::uint64_t n = 0;
      const ssize_t got = ::read(fd_.get(), &n, sizeof n);
      if (got < 0 && errno == EINTR) continue;
      if (got < 0 || closing_.load()) return;
      on_signal_();
    }
  }

  const int sig_;
  const std::function<void()> on_signal_;
  UniqueFd fd_;
  std::atomic<bool> closing_{false};
  struct sigaction previous_ {};
  std::thread thread_;
};

// One call's cancel (moatd's RunningCalls makes one per call). It is the flag itself, so what
// reads a bare flag reads it as before; raise() also writes its eventfd, which a poll loop
// includes to wake at once (sandbox/session_exec.cc), and stops its token, whose waiters'
// stop_callbacks run at once (an MCP call). Whoever only store()s true is heard by the flag
// alone, at the poll's tick. When the eventfd cannot be made, wake_fd() is -1.
class CallCancel : public std::atomic<bool> {
 public:
  CallCancel() : std::atomic<bool>(false), wake_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}
  void raise() {
    store(true);
    const std::uint64_t one = 1;
    if (wake_.valid()) (void)!::write(wake_.get(), &one, sizeof one);
    source_.request_stop();
  }
  int wake_fd() const { return wake_.get(); }
  std::stop_token token() const { return source_.get_token(); }

 private:
  UniqueFd wake_;
  std::stop_source source_;
};

class StopFlags {
 public:
  // Implicit from one flag (or nullptr: never raised), so a single flag reads as before.
  // `wake_fd`: an eventfd made readable when a flag is raised (CallCancel::wake_fd), -1: none.
  StopFlags(const std::atomic<bool>* first = nullptr,  // NOLINT(google-explicit-constructor)
            const std::atomic<bool>* second = nullptr, int wake_fd = -1)
      : first_(first), second_(second), wake_fd_(wake_fd) {}

  bool raised() const {
    return (first_ != nullptr && first_->load()) || (second_ != nullptr && second_->load());
  }
  int wake_fd() const { return wake_fd_; }

 private:
  const std::atomic<bool>* first_;
  const std::atomic<bool>* second_;
  int wake_fd_;
};

}  // namespace moat
