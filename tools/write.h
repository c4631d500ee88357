// tools/write.h: the `write` tool: create or replace a file atomically, parents included.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "tools/tool.h"

namespace moat::tools {

ToolSpec write_spec();

// In the worker: args {path, content}; `canonical` comes from resolve_in_root().
ToolResult write_in_sandbox(const std::string& canonical, const nlohmann::json& args);

}  // namespace moat::tools
