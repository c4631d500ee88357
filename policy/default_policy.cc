// policy/default_policy.cc: the built-in default policy. Its text is
// examples/policies/default.toml itself, embedded at build time (policy/meson.build), so the
// policy moat ships and the example people read cannot differ.
#include "policy/default_policy_text.h"
#include "policy/layer.h"

namespace moat::policy {

std::string_view builtin_default_policy_text() { return kDefaultPolicyText; }

}  // namespace moat::policy
