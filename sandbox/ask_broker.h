// sandbox/ask_broker.h: how an `ask` verdict reaches the person: through the session's
// console channel only, never through the agent's connection (docs/security.md, "The
// person's answers"), with the answers given "for the session" remembered here.
#pragma once

#include <nlohmann/json.hpp>

#include <atomic>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "policy/policy.h"
#include "sandbox/console_link.h"

namespace moat::sandbox {

class AskBroker {
 public:
  // A headless session asks nobody: its ask verdicts stay ask (the policy made them deny).
  explicit AskBroker(bool headless) : headless_(headless) {}

  // The person's channel, once the session has one (set before the first call runs).
  void set_console(std::shared_ptr<ConsoleLink> console) { console_ = std::move(console); }

  // An ask verdict on `what` ("the command 'make'", "writing '/w/x'") put to the person.
  // Returns the decision with decided_by "user" and the answer recorded in `answer` (for the
  // decision record); any other verdict, a headless session, or no console attached: `d`
  // unchanged. A cancel or the console hanging up while waiting is a deny nobody gave.
  policy::Decision ask(policy::Decision d, const std::string& call_id, const std::string& what,
                       const std::atomic<bool>& cancel, nlohmann::json& answer);

 private:
  // The decision the person's reply makes, remembered for the session when they said so.
  policy::Decision apply_reply(policy::Decision d, const ConsoleLink::Reply& reply,
                               const std::string& what, nlohmann::json& answer);

  const bool headless_;
  std::shared_ptr<ConsoleLink> console_;
  std::mutex mu_;
  std::set<std::string> session_allows_;  // "for the session" answers, by what was asked
};

// {"id","layer","file","line"} of a rule, as asks and decision records name it.
nlohmann::json rule_json(const policy::RuleRef& r);

}  // namespace moat::sandbox
