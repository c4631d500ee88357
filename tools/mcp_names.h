// tools/mcp_names.h: the one home of MCP names: a server's name, the name the model calls a
// server's tool by (mcp__SERVER__TOOL) and the name policy rules give it (mcp:SERVER:TOOL).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"

namespace moat::tools::mcp {

inline constexpr std::string_view kModelPrefix = "mcp__";   // the model's tool names
inline constexpr std::string_view kModelSeparator = "__";   // between server and tool
inline constexpr std::string_view kPolicyPrefix = "mcp:";   // POLICY.md's [[tool]] spelling
inline constexpr std::size_t kMaxServerNameBytes = 32;
// The model providers' tool-name rule (^[A-Za-z0-9_-]{1,64}$): a longer or other name is
// refused by the provider's API, so such a tool is not offered.
inline constexpr std::size_t kMaxModelToolNameBytes = 64;

struct ToolRef {
  std::string server;
  std::string tool;
  bool operator==(const ToolRef&) const = default;
};

// A server name is [A-Za-z0-9_-]{1,32} without "__" (the separator in the model's name).
// The error names the name (quoted) and says what is accepted.
Result<void> check_server_name(std::string_view name);

// "mcp__SERVER__TOOL", or an error saying why the tool is not offered to the model (the
// name is not ^[A-Za-z0-9_-]{1,64}$): `moat mcp list` shows it. The server name is checked.
Result<std::string> model_tool_name(std::string_view server, std::string_view tool);

// "mcp:SERVER:TOOL": the name a policy decision is made on (policy/match.cc).
std::string policy_tool_name(std::string_view server, std::string_view tool);

// True for a name in the model's MCP form (starts with "mcp__").
bool is_model_tool_name(std::string_view name);

// Splits "mcp__SERVER__TOOL" (the server ends at the first "__" after the prefix: a server
// name holds none) or "mcp:SERVER:TOOL"; nullopt when the name is neither, or a part is empty
// or the server part is not a valid server name.
std::optional<ToolRef> parse_tool_name(std::string_view name);

}  // namespace moat::tools::mcp
