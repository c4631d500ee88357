// sandbox/call_ends.cc: ending a running call from another thread (call_ends.h).
#include "sandbox/call_ends.h"

namespace moat::sandbox {

void CallEnds::start(const std::string& id, std::shared_ptr<CallCancel> flag) {
  std::lock_guard<std::mutex> lock(mu_);
  running_[id] = Running{std::move(flag), {}};
}

bool CallEnds::end(const std::string& id, const std::string& why) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = running_.find(id);
  if (it == running_.end() || !it->second.why.empty()) return false;
  it->second.why = why;
  it->second.flag->raise();
  return true;
}

std::string CallEnds::finish(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = running_.find(id);
  if (it == running_.end()) return {};
  std::string why = std::move(it->second.why);
  running_.erase(it);
  return why;
}

void CallEnds::cancelled_by_person(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = running_.find(id); it != running_.end()) it->second.by_person = true;
}

bool CallEnds::was_cancelled_by_person(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = running_.find(id);
  return it != running_.end() && it->second.by_person;
}

std::string call_ended_note(const std::string& why) { return "[moat ended this call: " + why + "]"; }

}  // namespace moat::sandbox
