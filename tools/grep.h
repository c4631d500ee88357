// tools/grep.h: the `grep` tool: ripgrep when the sandbox has it, a built-in walk with
// std::regex otherwise; one formatter for both.
#pragma once

#include "tools/tool_row.h"

namespace moat::tools {

extern const Tool kGrepTool;

}  // namespace moat::tools
