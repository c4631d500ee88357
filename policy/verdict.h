// policy/verdict.h: what a decision is (verdict, deciding rule, access), below the policy and
// its matchers, which all return or name one.
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <string>
#include <vector>

#include "policy/decided_by.h"

namespace moat::policy {

enum class Verdict { kAllow = 0, kAsk = 1, kDeny = 2 };  // ordered: higher is stricter
const char* verdict_name(Verdict v);                     // "allow" | "ask" | "deny"

// Where a rule came from: every decision names its deciding rule like this.
struct RuleRef {
  std::string id;     // "org.no-force-push", or "defaults.command" when no rule matched
  std::string layer;  // "system" | "user" | "project" | "cli" | "builtin"
  std::string file;   // file the rule was read from ("" for builtin/cli)
  int line = 0;
};

struct Decision {
  Verdict verdict = Verdict::kDeny;
  RuleRef deciding;
  std::vector<RuleRef> matched;      // every rule that matched, deciding one included
  // Who decided (decided_by.h); its name is what the audit record and explain write.
  DecidedBy decided_by = DecidedBy::kPolicy;
  std::string reason;                // the rule's reason, for the model and the person
  bool headless_downgraded = false;  // the policy said ask; headless made it deny
  // Exec time only: the id of the ask rule a program met while headless, when
  // [exec] headless_ask = "allow" let it run (verdict allow, decided_by "observed"); the
  // audit record, the call's result and the batch report show it. Empty otherwise.
  std::string flagged;

  // Per-unit breakdown of a shell line ({units, problems}; null for other decisions), for
  // the audit record and policy explain. Built on request: most decisions are never
  // explained, and building it for each was over a third of decide_command's time.
  nlohmann::json detail() const { return detail_fn ? detail_fn() : nlohmann::json(); }
  std::function<nlohmann::json()> detail_fn;  // set by the policy; owns what it needs
};

enum class Access { kRead, kWrite, kExec };

}  // namespace moat::policy
