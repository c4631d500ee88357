// sandbox/ask_broker.cc: puts ask verdicts to the person over the console channel.
#include "sandbox/ask_broker.h"

#include <chrono>
#include <optional>

#include "sandbox/protocol.h"
#include "base/random.h"

namespace moat::sandbox {

using nlohmann::json;

json rule_json(const policy::RuleRef& r) {
  return {{"id", r.id}, {"layer", r.layer}, {"file", r.file}, {"line", r.line}};
}

policy::Decision AskBroker::ask(policy::Decision d, const std::string& call_id,
                                const std::string& what, const std::atomic<bool>& cancel,
                                json& answer) {
  if (d.verdict != policy::Verdict::kAsk || headless_) return d;
  const auto t0 = std::chrono::steady_clock::now();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (session_allows_.count(what) != 0) {
      d.verdict = policy::Verdict::kAllow;
      d.decided_by = policy::DecidedBy::kUser;
      answer = {{"answer", "allow"}, {"scope", "session"}, {"remembered", true}, {"latency_ms", 0}};
      return d;
    }
  }
  std::string question =
      what + " needs your approval: rule " + d.deciding.id + " (" + d.deciding.layer + ") says ask";
  if (!d.reason.empty()) question += ": " + d.reason;
  // No console attached (not yet, or it hung up): nobody can answer, the verdict stays ask.
  if (!console_) return d;
  const AskMsg msg{call_id, random_hex_or_abort(8), question, rule_json(d.deciding)};
  std::optional<ConsoleLink::Reply> reply = console_->ask(msg, cancel);
  if (!reply) return d;
  d = apply_reply(std::move(d), *reply, what, answer);
  if (!answer.is_null())
    answer["latency_ms"] =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
            .count();
  return d;
}

policy::Decision AskBroker::apply_reply(policy::Decision d, const ConsoleLink::Reply& reply,
                                        const std::string& what, json& answer) {
  if (!reply.answer) {
    // Cancelled, or the console went away: a deny, but not a person's.
    d.verdict = policy::Verdict::kDeny;
    d.reason = "nobody answered (the call was cancelled or the console hung up)";
    return d;
  }
  std::lock_guard<std::mutex> lock(mu_);
  const bool allow = reply.answer->allow;
  const std::string scope = reply.answer->for_session ? "session" : "once";
  if (allow && reply.answer->for_session) session_allows_.insert(what);
  d.verdict = allow ? policy::Verdict::kAllow : policy::Verdict::kDeny;
  d.decided_by = policy::DecidedBy::kUser;
  answer = {{"answer", allow ? "allow" : "deny"}, {"scope", scope}, {"channel", "console"}};
  if (!allow) d.reason = "the person declined";
  return d;
}

}  // namespace moat::sandbox
