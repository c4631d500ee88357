// tools/mcp_names.cc: MCP server and tool names (the rules are in mcp_names.h).
#include "tools/mcp_names.h"

#include <algorithm>

#include "base/log.h"

namespace moat::tools::mcp {
namespace {

bool is_name_byte(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
         c == '_' || c == '-';
}

bool is_name(std::string_view s, std::size_t max) {
  return !s.empty() && s.size() <= max && std::all_of(s.begin(), s.end(), is_name_byte);
}

}  // namespace

Result<void> check_server_name(std::string_view name) {
  if (is_name(name, kMaxServerNameBytes) && name.find(kModelSeparator) == std::string_view::npos)
    return {};
  return fail("MCP server name " + moat::quoted(name) +
              ": expected 1 to 32 of A-Z a-z 0-9 _ -, without \"__\"");
}

Result<std::string> model_tool_name(std::string_view server, std::string_view tool) {
  MOAT_TRY(check_server_name(server));
  std::string name = std::string(kModelPrefix) + std::string(server) +
                     std::string(kModelSeparator) + std::string(tool);
  if (tool.empty() || !is_name(name, kMaxModelToolNameBytes))
    return fail("MCP tool " + moat::quoted(tool) + " of server " + moat::quoted(server) +
                ": not offered: its model name " + moat::quoted(name) +
                " must be 1 to 64 of A-Z a-z 0-9 _ -");
  return name;
}

std::string policy_tool_name(std::string_view server, std::string_view tool) {
  return std::string(kPolicyPrefix) + std::string(server) + ":" + std::string(tool);
}

bool is_model_tool_name(std::string_view name) { return name.starts_with(kModelPrefix); }

std::optional<ToolRef> parse_tool_name(std::string_view name) {
  std::string_view rest;
  std::string_view sep;
  if (name.starts_with(kModelPrefix)) {
    rest = name.substr(kModelPrefix.size());
    sep = kModelSeparator;
  } else if (name.starts_with(kPolicyPrefix)) {
    rest = name.substr(kPolicyPrefix.size());
    sep = ":";
  } else {
    return std::nullopt;
  }
  const std::size_t at = rest.find(sep);
  if (at == std::string_view::npos) return std::nullopt;
  ToolRef ref{std::string(rest.substr(0, at)), std::string(rest.substr(at + sep.size()))};
  if (ref.tool.empty() || !check_server_name(ref.server)) return std::nullopt;
  return ref;
}

}  // namespace moat::tools::mcp
