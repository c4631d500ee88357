// policy/toml_load.h: one policy file's TOML text to a PolicyFile; every error names
// file:line:col, the key, and what is accepted.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "policy/file_limits.h"
#include "policy/schema.h"

namespace moat::policy {

struct ParseOptions {
  std::string file;                     // named in every error and kept in every rule's pos
  bool unknown_keys_are_errors = true;  // false: unknown keys become notices
  bool repository = false;  // a repository's file (the project layer): [[mcp.server]] env is refused
};

// Parses `text`. Never throws: toml++'s exceptions are contained in this file. Unknown keys
// (when lenient) append "file:line:col: ..." lines to `notices`, which may be null.
Result<PolicyFile> parse_policy_text(std::string_view text, const ParseOptions& options,
                                     std::vector<std::string>* notices);

// A [[tool]] rule's tests entry: the tool name, then optionally a space and the call's
// arguments as a JSON object: "mcp:files:read {\"path\": \"/w/a\"}". The error says which.
struct ToolTestInput {
  std::string tool;
  nlohmann::json args = nlohmann::json::object();
};
Result<ToolTestInput> parse_tool_test(std::string_view input);

// The keys a table accepts, as the loader checks them ("top", "defaults", "resources",
// "layer", "constraints", "tests", "command", "command.unless", "path", "path.unless",
// "network", "tool", "tool.unless", "mcp", "mcp.server"); empty for an unknown table. Tests compare these
// with schema.h.
const std::vector<std::string>& known_keys(std::string_view table);

}  // namespace moat::policy
