// policy/mcp_servers.h: the MCP servers a session may run, from the loaded layers (which
// layer's declaration counts, the organisation's managed_mcp_servers_only), and the hints a
// server's tool annotations give the [[tool]] default.
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <vector>

#include "base/result.h"
#include "policy/layer.h"
#include "policy/schema.h"

namespace moat::policy {

// One effective server, as moatd starts it (docs/policy.md "MCP servers").
struct McpServerConfig {
  std::string name;
  std::vector<std::string> argv;  // stdio server; empty for an HTTP one
  std::string url;                // HTTP server; empty for a stdio one
  std::vector<std::string> env;   // NAMES of the person's variables passed (never a project's)
  std::vector<std::string> read;  // absolute host directories bound read-only
  std::string start = "on-use";   // "session" | "on-use"
  Resources resources;            // narrows the session's ceilings for this server
  std::string layer;              // "system" | "user" | "project" | "cli"
  SourcePos pos;                  // file:line of the declaration (a .mcp.json's entry)
};

// The effective servers: the first declaration of a name wins in layer order (system, user,
// project, cli), so a system server is never replaced; a later one is ignored with a notice
// naming both. With a system layer's constraints.managed_mcp_servers_only, only the system
// layer's count. Two files of one layer declaring one name fail the load, naming both.
Result<std::vector<McpServerConfig>> effective_mcp_servers(const std::vector<LoadedLayer>& layers,
                                                           std::vector<std::string>* notices);

// What a tool's annotations (MCP tools/list "annotations") say, per the MCP specification's
// defaults: destructiveHint counts only when readOnlyHint is not true and is true when absent.
// A server is untrusted: the hints only ever choose the default of a call no [[tool]] rule
// matches (Policy::decide_tool), never a rule's decision.
struct ToolHints {
  bool read_only = false;
  bool destructive = false;
};
ToolHints tool_hints(const nlohmann::json& annotations);

// A server that may be given the person's variables its `env` names (docs/mcp.md "env"): one a
// system or user layer declared; a repository's or a --policy file's gets none.
inline bool takes_person_env(const McpServerConfig& c) {
  return c.layer == "system" || c.layer == "user";
}

// The values in this process's environment of the names the servers that take the person's
// variables (takes_person_env) list in `env`; unset names are left out. What `moat run` and
// `moat mcp test` send in the hello (sandbox::HelloMsg::env): nothing else of it.
std::map<std::string, std::string> person_env(const std::vector<McpServerConfig>& servers);

}  // namespace moat::policy
