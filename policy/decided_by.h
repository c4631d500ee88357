// policy/decided_by.h: who decided an action, as a decision, an exec record and the agent's
// events name it (docs/sessions.md, "The audit log"): one enum, one name per value.
#pragma once

#include <iterator>
#include <optional>
#include <string_view>

namespace moat::policy {

enum class DecidedBy {
  kPolicy,      // a rule matched
  kDefault,     // no rule matched: the defaults table decided
  kConstraint,  // the organisation's constraints
  kObserved,    // exec time: no rule gates it, it ran and is recorded (or ran flagged)
  kUser,        // a person answered an ask, or (decide_typed) typed the line
  kPermissive,  // moatd --permissive allowed it
  kMoat,        // the exec watch itself refused it (policy/explain never says this)
  kCall,        // the call's own program, or an ask its line met: decided with the call
};

// The names, in the order of DecidedBy; the one table both conversions read.
inline constexpr std::string_view kDecidedByNames[] = {
    "policy", "default", "constraint", "observed", "user", "permissive", "moat", "call"};
static_assert(std::size(kDecidedByNames) == static_cast<std::size_t>(DecidedBy::kCall) + 1,
              "one name per DecidedBy");

constexpr std::string_view decided_by_name(DecidedBy d) {
  return kDecidedByNames[static_cast<std::size_t>(d)];
}

// nullopt for a name that is none of them.
constexpr std::optional<DecidedBy> decided_by_from_name(std::string_view name) {
  for (std::size_t i = 0; i < std::size(kDecidedByNames); ++i)
    if (kDecidedByNames[i] == name) return static_cast<DecidedBy>(i);
  return std::nullopt;
}

}  // namespace moat::policy
