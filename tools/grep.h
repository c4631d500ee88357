// tools/grep.h: the `grep` tool: ripgrep when the sandbox has it, a built-in walk with
// std::regex otherwise; one formatter for both.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "tools/registry.h"
#include "tools/tool.h"

namespace moat::tools {

ToolSpec grep_spec();

// In the worker: the built-in back end.
ToolResult grep_in_sandbox(const std::string& canonical, const nlohmann::json& args);

// In moatd: runs rg (its path inside the sandbox) through the runner and formats its
// --json stream.
ToolResult grep_with_rg(const std::string& rg, const std::string& canonical, bool is_dir,
                        const nlohmann::json& args, CallContext& ctx);

}  // namespace moat::tools
