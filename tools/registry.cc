// tools/registry.cc: the tool set (filled in by the tools work: read, bash, edit, ...).
#include "tools/registry.h"

namespace moat::tools {

const std::vector<ToolSpec>& all_tools() {
  static const std::vector<ToolSpec> kTools;
  return kTools;
}

const ToolSpec* find_tool(std::string_view name) {
  for (const auto& t : all_tools())
    if (t.name == name) return &t;
  return nullptr;
}

ToolResult execute(const std::string& tool, const nlohmann::json&, CallContext&) {
  return ToolResult::error("unknown tool " + tool);
}

std::string handle_in_sandbox(std::string_view) { return R"({"isError":true})"; }

}  // namespace moat::tools
