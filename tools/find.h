// tools/find.h: the `find` tool: files whose path matches a glob, .gitignore respected,
// dotfiles included, sorted. fdfind (when the sandbox has it) does the listing; the
// filtering and formatting are the same code either way, so the output is identical.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "base/result.h"
#include "tools/registry.h"
#include "tools/tool.h"

namespace moat::tools {

ToolSpec find_spec();

// In the worker: args {pattern, path?, limit?}; with args["_listed"] (fdfind's absolute
// paths) that list is filtered instead of walking the tree.
ToolResult find_in_sandbox(const std::string& canonical, const nlohmann::json& args);

// In moatd: every file and symlink below `canonical` as fdfind lists it inside the sandbox
// (no ignore files: .gitignore is applied by find_in_sandbox, identically to the walk).
Result<std::vector<std::string>> list_with_fd(const std::string& fd, const std::string& canonical,
                                              CallContext& ctx);

}  // namespace moat::tools
