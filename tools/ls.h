// tools/ls.h: the `ls` tool: one directory's entries, sorted, dotfiles included,
// .gitignore respected, directories marked with '/'.
#pragma once

#include "tools/tool_row.h"

namespace moat::tools {

extern const Tool kLsTool;

}  // namespace moat::tools
