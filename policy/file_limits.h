// policy/file_limits.h: how large a policy file may be, named once for the loader
// (toml_load.cc, layer.cc) and for moatd's second read of the project layer
// (sandbox/hello_steps.cc check_project_layer_is_the_workspaces).
#pragma once

#include <cstddef>

namespace moat::policy {

// Refused before parsing: a policy is a page of rules, not a data set (docs/policy.md: "A file
// larger than 1 MiB is refused"). A project layer larger than this was never loaded, so moatd's
// re-read needs no more.
inline constexpr std::size_t kMaxPolicyFileBytes = std::size_t{1} << 20;

}  // namespace moat::policy
