// tools/edit.h: the `edit` tool: exact, unique, non-overlapping replacements matched
// against the original file, applied together, answered with a unified diff.
#pragma once

#include "tools/tool_row.h"

namespace moat::tools {

extern const Tool kEditTool;

}  // namespace moat::tools
