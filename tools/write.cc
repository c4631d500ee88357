// tools/write.cc: `write`.
#include "tools/write.h"

#include "tools/atomic_write.h"
#include "tools/schema.h"

namespace moat::tools {
namespace {

// What the model reads about write (it has no limit of its own to state).
constexpr const char* kWriteDescription =
    "Write content to a file. Creates the file if it does not exist and replaces it atomically "
    "if it does (readers see the old or the new content, never a mix); creates missing parent "
    "directories. Use edit for changes to part of an existing file.";

ToolSpec write_spec(const ToolLimits&) {
  ToolSpec s;
  s.description = kWriteDescription;
  s.parameters = object_schema(
      {{"path",
        property("string", "Path to the file to write (relative to the workspace or absolute)",
                 {{"minLength", 1}})},
       {"content", property("string", "Content to write to the file")}},
      {"path", "content"});
  s.mutates = true;
  return s;
}

ToolResult write_in_sandbox(const std::string& canonical, const nlohmann::json& args) {
  const std::string& content = args.at("content").get_ref<const std::string&>();
  if (auto r = replace_file(canonical, content, /*create_parents=*/true); !r)
    return ToolResult::error("cannot write " + canonical + ": " + r.error().message());
  ToolResult r =
      ToolResult::text("Wrote " + std::to_string(content.size()) + " bytes to " + canonical);
  r.details = {{"bytes", content.size()}, {"path", canonical}, {"filesMutated", {canonical}}};
  return r;
}

std::vector<Guideline> write_guidance(const GrantedTools& granted) {
  return {{GuidelineSlot::kChange, granted.has("edit")
                                       ? "Use write only for new files or complete rewrites."
                                       : "Use write to create or replace whole files."}};
}

}  // namespace

const Tool kWriteTool = {
    .name = "write",
    .spec = &write_spec,
    .file = FileOp{.access = PathAccess::kWrite, .must_exist = false, .op = &write_in_sandbox},
    .file_argument = "path",
    .changes_files = true,
    .guidance = &write_guidance};

}  // namespace moat::tools
