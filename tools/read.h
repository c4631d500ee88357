// tools/read.h: the `read` tool: a text file by lines (head truncation) or an image block.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "tools/tool.h"

namespace moat::tools {

ToolSpec read_spec();

// In the worker: reads the canonical path with args {path, offset?, limit?}; args.path is
// the spelling the model used, echoed in notices.
ToolResult read_in_sandbox(const std::string& canonical, const nlohmann::json& args);

}  // namespace moat::tools
