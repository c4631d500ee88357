// policy/toml_load.h: one policy file's TOML text to a PolicyFile; every error names
// file:line:col, the key, and what is accepted.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "policy/schema.h"

namespace moat::policy {

// Refused before parsing: a policy is a page of rules, not a data set.
inline constexpr std::size_t kMaxPolicyFileBytes = 1 << 20;

struct ParseOptions {
  std::string file;                     // named in every error and kept in every rule's pos
  bool unknown_keys_are_errors = true;  // false: unknown keys become notices
};

// Parses `text`. Never throws: toml++'s exceptions are contained in this file. Unknown keys
// (when lenient) append "file:line:col: ..." lines to `notices`, which may be null.
Result<PolicyFile> parse_policy_text(std::string_view text, const ParseOptions& options,
                                     std::vector<std::string>* notices);

// The keys a table accepts, as the loader checks them ("top", "defaults", "resources",
// "layer", "constraints", "tests", "command", "command.unless", "path", "path.unless",
// "network", "tool", "tool.unless"); empty for an unknown table. Tests compare these
// with schema.h.
const std::vector<std::string>& known_keys(std::string_view table);

// "10m" / 90 / "1h30m" style durations in seconds; "4GiB" / 1024 style sizes in bytes.
Result<std::int64_t> parse_duration_seconds(std::string_view text);
Result<std::int64_t> parse_size_bytes(std::string_view text);

}  // namespace moat::policy
