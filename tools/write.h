// tools/write.h: the `write` tool: create or replace a file atomically, parents included.
#pragma once

#include "tools/tool_row.h"

namespace moat::tools {

extern const Tool kWriteTool;

}  // namespace moat::tools
