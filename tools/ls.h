// tools/ls.h: the `ls` tool: one directory's entries, sorted, dotfiles included,
// .gitignore respected, directories marked with '/'.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "tools/tool.h"

namespace moat::tools {

ToolSpec ls_spec();
ToolResult ls_in_sandbox(const std::string& canonical, const nlohmann::json& args);

}  // namespace moat::tools
