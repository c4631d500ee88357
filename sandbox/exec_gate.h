// sandbox/exec_gate.h: the call gate's part in the exec watch: every program one tool call
// starts is judged by the policy (policy::Policy::decide_exec), an ask is put to the person,
// and each program gets an "exec" record before it runs and an "exec.end" when it ends
// (docs/sessions.md, "The audit log"). One gate per call.
#pragma once

#include <nlohmann/json.hpp>

#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "sandbox/ask_broker.h"
#include "sandbox/exec_watch.h"
#include "sandbox/session_state.h"

namespace moat::sandbox {

class ExecGate final : public ExecObserver {
 public:
  // `approved`: the rules the call's own command line met and was allowed under (by the
  // policy, or by the person's answer): a program it runs whose verdict is an ask by one of
  // them was approved with the call, and is not asked again.
  ExecGate(SessionState& session, AskBroker& asks, std::string call_id, std::string decision_id,
           const std::atomic<bool>& cancel, std::set<std::string> approved = {})
      : session_(session),
        asks_(asks),
        call_id_(std::move(call_id)),
        decision_id_(std::move(decision_id)),
        cancel_(cancel),
        approved_(std::move(approved)) {}

  ExecAnswer on_exec(const ExecRequest& request) override;
  void on_end(const ExecEnd& end) override;

  // What the model reads after the tool's own result: each refused program, by which rule
  // and why. Empty when nothing was refused.
  std::string refusals_text() const;
  // The same for each program that met an ask rule while nobody could be asked and ran,
  // flagged ([exec] headless_ask = "allow"): which program, by which rule. Empty when none did.
  std::string flagged_text() const;
  int execs() const;
  int refused() const;
  int flagged() const;  // programs that ran flagged (counted in execs too)
  // [{"argv": "curl --version", "rule": "default.network-tools"}] of the first few flagged.
  nlohmann::json flagged_json() const;

 private:
  // The "exec" record, written before the program runs; false when it could not be and the
  // log is required (then the program does not run).
  bool record_exec(const ExecRequest& r, const policy::Decision& d, const nlohmann::json& answer);
  policy::Decision decided(const ExecRequest& r) const;

  SessionState& session_;
  AskBroker& asks_;
  const std::string call_id_, decision_id_;
  const std::atomic<bool>& cancel_;
  const std::set<std::string> approved_;
  mutable std::mutex mu_;
  int execs_ = 0;
  // One line per refused program (the first few), with how many execs it refused: a shell
  // searching PATH tries the same program once per directory that holds it (/usr/bin and
  // /bin on a merged-/usr system), and the person should read one refusal, not two.
  struct Refusal {
    std::string text;
    int times = 1;
  };
  std::vector<Refusal> refusals_;
  int unlisted_ = 0;  // refused execs past the first few distinct programs
  int refused_ = 0;   // every refused exec (the call record's refused_execs)
  nlohmann::json flags_ = nlohmann::json::array();  // one per flagged program (first few kept)
  int flagged_ = 0;
};

}  // namespace moat::sandbox
