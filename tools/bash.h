// tools/bash.h: the `bash` tool: `bash -c` in the workspace through the sandbox runner,
// output kept in a bounded rolling buffer (tail truncation) and spilled to a file.
#pragma once

#include <nlohmann/json.hpp>

#include "tools/registry.h"
#include "tools/tool.h"

namespace moat::tools {

ToolSpec bash_spec();

// Runs args {command, timeout?}. Non-zero exit, timeout, cancel and the output ceiling
// are errors that carry the output.
ToolResult run_bash(const nlohmann::json& args, CallContext& ctx);

}  // namespace moat::tools
