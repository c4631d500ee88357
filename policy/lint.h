// policy/lint.h: `moat policy lint` (schema, unknown keys, ownership, rules that can never
// decide) and `moat policy test` (every rule's tests.match / tests.not_match).
#pragma once

#include <string>
#include <vector>

#include "policy/policy.h"

namespace moat::policy {

struct Finding {
  std::string severity;  // "error" | "warning" | "notice"
  std::string where;     // "file:line", or "" for the whole policy
  std::string message;
};

// Loads like Policy::load (a load failure is one error finding), then looks for rules that
// cannot decide anything: allows the organisation's constraints or the cli layer ignore,
// and rules shadowed by an unconditional stricter rule for the same programs or tools.
std::vector<Finding> lint_policy(const LoadOptions& options);

struct RuleTestResult {
  std::string rule;   // id
  std::string where;  // file:line of the rule
  std::string input;  // the test line, path or tool name
  bool expect_match = true;
  std::string outcome;  // "pass" | "fail" | "skip"
  std::string detail;   // why it failed or was skipped
};

// Runs every rule's tests; command lines are judged in `cwd`.
std::vector<RuleTestResult> run_rule_tests(const Policy& policy, const std::string& cwd);

}  // namespace moat::policy
