// policy/verdict.cc: names of verdicts, as they appear in TOML, audit records and explain.
#include "policy/verdict.h"

namespace moat::policy {

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::kAllow: return "allow";
    case Verdict::kAsk: return "ask";
    case Verdict::kDeny: return "deny";
  }
  return "deny";
}

}  // namespace moat::policy
