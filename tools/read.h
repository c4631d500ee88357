// tools/read.h: the `read` tool: a text file by lines (head truncation) or an image block.
#pragma once

#include "tools/tool_row.h"

namespace moat::tools {

extern const Tool kReadTool;

}  // namespace moat::tools
