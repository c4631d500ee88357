// policy/explain.h: a decision rendered for people (`moat policy explain`) and as JSON
// (`--json`, the same role as `codex execpolicy check`).
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "policy/policy.h"

namespace moat::policy {

// {units:[{argv, matched:[{id,layer,file,line,decision}], decision}], decision,
//  deciding_rule, policy_hash, mode}
nlohmann::json explain_json(const Decision& d, const Policy& policy, const std::string& input);
// The aligned text form: one line per unit, "also matched" lines, and the result.
std::string explain_text(const Decision& d, const Policy& policy, const std::string& input);

}  // namespace moat::policy
