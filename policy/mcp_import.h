// policy/mcp_import.h: what an MCP server declaration may be (its name, its bounds), and the
// read-only import of a repository's `.mcp.json` / `.vscode/mcp.json` into the project layer.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "policy/schema.h"

namespace moat::policy {

// A policy file (or an imported file) declares at most this many servers: each one is a
// process in every session and a block of tools in the model's context.
inline constexpr std::size_t kMaxMcpServers = 32;
// Words of one server's argv.
inline constexpr std::size_t kMaxMcpArgv = 256;

// The repository files imported, relative to the workspace root, in the order they are read.
inline constexpr const char* kMcpImportFiles[] = {".mcp.json", ".vscode/mcp.json"};

// [A-Za-z0-9_-]{1,32} without "__" (the model's name mcp__SERVER__TOOL splits on it).
bool is_mcp_server_name(std::string_view name);

// The servers of one imported file: {"mcpServers": {NAME: {...}}} (Claude Code, Cursor) or
// {"servers": {NAME: {...}}} (VS Code), each {"command", "args"} (a stdio server, "type"
// absent or "stdio") or {"url"} ("type" "http" or "streamable-http"). Its "env" values are
// not passed (a repository's server gets none of the person's variables): a notice says so.
// Errors name `file` and the entry's JSON pointer.
Result<std::vector<McpServerDecl>> import_mcp_json(std::string_view text, const std::string& file,
                                                   std::vector<std::string>* notices);

}  // namespace moat::policy
