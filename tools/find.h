// tools/find.h: the `find` tool: files whose path matches a glob, .gitignore respected,
// dotfiles included, sorted. fdfind (when the sandbox has it) does the listing; the
// filtering and formatting are the same code either way, so the output is identical.
#pragma once

#include "tools/tool_row.h"

namespace moat::tools {

extern const Tool kFindTool;

}  // namespace moat::tools
