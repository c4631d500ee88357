// sandbox/running_calls.cc: one connection's running calls and their bounds.
#include "sandbox/running_calls.h"

#include "base/log.h"
#include "sandbox/protocol.h"

namespace moat::sandbox {

Result<std::shared_ptr<CallCancel>> RunningCalls::start(const std::string& id,
                                                        std::size_t frame_bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  if (running_.count(id) != 0) return fail("call id " + moat::quoted(id) + " is already running");
  if (running_.size() >= kMaxConcurrentCalls)
    return fail("refused: " + std::to_string(running_.size()) +
                " calls are already running on this connection (the limit is " +
                std::to_string(kMaxConcurrentCalls) + "); wait for one to finish");
  if (bytes_ + frame_bytes > kMaxRunningCallBytes)
    return fail("refused: the running calls' arguments already hold " + std::to_string(bytes_) +
                " bytes (the limit is " + std::to_string(kMaxRunningCallBytes) +
                "); wait for one to finish");
  auto flag = std::make_shared<CallCancel>();
  running_[id] = flag;
  bytes_ += frame_bytes;
  return flag;
}

void RunningCalls::end(const std::string& id, std::size_t frame_bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  running_.erase(id);
  bytes_ -= frame_bytes;
}

void RunningCalls::cancel(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = running_.find(id); it != running_.end()) it->second->raise();
}

void RunningCalls::cancel_all() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [id, flag] : running_) flag->raise();
}

}  // namespace moat::sandbox
