// sandbox/call_ends.h: ending a running call from another of moatd's threads, with the reason
// (the network proxy's rate bound, issue 26 item 10: the call that floods is ended, not the
// session's network).
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "base/stop_flags.h"

namespace moat::sandbox {

// Thread-safe; one per session, shared with the proxy's threads.
class CallEnds {
 public:
  // Call `id` runs until finish(id); raising `flag` (its cancel flag, RunningCalls) ends it.
  void start(const std::string& id, std::shared_ptr<CallCancel> flag);
  // Ends call `id`, saying `why`. False when no call `id` runs or it is already being ended.
  bool end(const std::string& id, const std::string& why);
  // Call `id` is over: why it was ended, "" when it was not.
  std::string finish(const std::string& id);
  // A cancel frame came for call `id` (the agent sends one when the person presses Ctrl-C or
  // aborts): its record says it was cancelled by the person, not only the signal that stopped
  // it (issue 27 item 21). Raising its cancel flag stays RunningCalls::cancel's.
  void cancelled_by_person(const std::string& id);
  bool was_cancelled_by_person(const std::string& id);

 private:
  struct Running {
    std::shared_ptr<CallCancel> flag;
    std::string why;
    bool by_person = false;
  };
  std::mutex mu_;
  std::map<std::string, Running> running_;
};

// What the model and the person read about a call ended by end(): one line.
std::string call_ended_note(const std::string& why);

}  // namespace moat::sandbox
