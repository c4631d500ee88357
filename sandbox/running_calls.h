// sandbox/running_calls.h: the calls running on one connection, each with its cancel flag,
// within the bounds of protocol.h: each holds a thread and its arguments, so a client gets a
// bounded share of moatd (kMaxConcurrentCalls, kMaxRunningCallBytes).
#pragma once

#include <atomic>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "base/result.h"
#include "base/stop_flags.h"

namespace moat::sandbox {

class RunningCalls {
 public:
  // Registers call `id`, whose frame held `frame_bytes`, and returns its cancel flag; or the
  // refusal the client reads: the id is already running, or a bound would be broken.
  Result<std::shared_ptr<CallCancel>> start(const std::string& id, std::size_t frame_bytes);
  // The call ended: its id may be used again and its bytes count no more. Called before the
  // call's result is sent, never after: the client may reuse the id once it reads the result.
  void end(const std::string& id, std::size_t frame_bytes);
  // Raises the call's cancel (CallCancel::raise: its flag, wake and token), if it is running.
  void cancel(const std::string& id);
  // The session ends: every running call is cancelled.
  void cancel_all();

 private:
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<CallCancel>> running_;
  std::size_t bytes_ = 0;  // frame bytes of the calls in running_
};

}  // namespace moat::sandbox
