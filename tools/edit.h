// tools/edit.h: the `edit` tool: exact, unique, non-overlapping replacements matched
// against the original file, applied together, answered with a unified diff.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "tools/tool.h"

namespace moat::tools {

ToolSpec edit_spec();

// In the worker: args {path, edits[{oldText, newText}]} (after repair and validation).
ToolResult edit_in_sandbox(const std::string& canonical, const nlohmann::json& args);

}  // namespace moat::tools
