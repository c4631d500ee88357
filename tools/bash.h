// tools/bash.h: the `bash` tool: `bash -c` in the workspace through the sandbox runner,
// output kept in a bounded rolling buffer (tail truncation) and spilled to a file.
#pragma once

#include "tools/tool_row.h"

namespace moat::tools {

extern const Tool kBashTool;

}  // namespace moat::tools
