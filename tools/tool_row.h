// tools/tool_row.h: everything about one tool in one row, like pi's AgentTool: its spec (from
// the session's limits), how it runs, its argument repair, what the policy judges, the file
// it names and the guidance the system prompt gives for it. tools/<tool>.cc defines its row;
// registry.cc lists the rows, and nothing outside tools/ compares a tool's name.
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tools/call_context.h"
#include "tools/tool.h"

namespace moat::tools {

// Where a file tool's path leads inside the sandbox.
struct Target {
  std::string canonical;
  bool is_dir = false;
  std::string program;  // the external back end inside the sandbox, when asked for and present
};

// The worker side of a file tool: the operation on the canonical path, inside the sandbox.
using SandboxOp = ToolResult (*)(const std::string& canonical, const nlohmann::json& args);
// Runs the tool's SandboxOp with these arguments in a worker.
using InWorker = std::function<ToolResult(const nlohmann::json& args)>;

// A tool whose work is a file operation: moatd resolves its path, the policy judges that
// path for `access`, then `op` runs in a worker.
struct FileOp {
  PathAccess access = PathAccess::kRead;
  const char* default_path = nullptr;  // when `path` is optional; nullptr when it is required
  bool must_exist = true;              // false: the operation creates it (write)
  SandboxOp op = nullptr;
  // Programs that replace the built-in back end when the sandbox has one of them (rg,
  // fdfind), and how moatd runs the call with the one found (it may end in `op` too).
  std::vector<std::string> external = {};
  ToolResult (*run_external)(const Target& target, const nlohmann::json& args, CallContext& ctx,
                             const InWorker& in_worker) = nullptr;
};

// The operation of a tool that searches below a directory (grep, find, ls): it reads, its
// `path` defaults to the workspace, and it may hand the search to a faster program.
inline FileOp search_op(SandboxOp op, std::vector<std::string> external = {},
                        decltype(FileOp::run_external) run_external = nullptr) {
  return FileOp{.access = PathAccess::kRead,
                .default_path = ".",
                .op = op,
                .external = std::move(external),
                .run_external = run_external};
}

// Where a line of the system prompt's guidelines goes: exploring, reading, changing, testing.
enum class GuidelineSlot { kExplore, kRead, kChange, kTest };

struct Guideline {
  GuidelineSlot slot = GuidelineSlot::kExplore;
  std::string text = {};
};

struct Tool;

// The tools a session was granted, as one tool's guidance sees them.
struct GrantedTools {
  std::vector<const Tool*> tools = {};
  bool has(std::string_view name) const;
  bool any_explores() const;
};

struct Tool {
  std::string_view name = {};
  ToolSpec (*spec)(const ToolLimits& limits) = nullptr;
  // The call's own run (bash); nullptr when `file` says how it runs.
  ToolResult (*run)(const nlohmann::json& args, CallContext& ctx) = nullptr;
  std::optional<FileOp> file = std::nullopt;
  // A shape models often send that is repaired without guessing, after the schema's generic
  // repair (edit: a top-level oldText/newText); notes say what was done.
  void (*repair)(nlohmann::json& args, std::vector<std::string>* notes) = nullptr;
  // The command line the policy judges besides the tool's name (bash), or nullopt.
  std::optional<std::string> (*command)(const nlohmann::json& args) = nullptr;
  // The argument naming the one file the call reads (or, when the spec mutates, changes):
  // compaction lists those files. nullptr when there is none (a search root is not one).
  const char* file_argument = nullptr;
  bool explores = false;       // a bounded way to look around the workspace (grep, find, ls)
  bool changes_files = false;  // the session can change files with it
  std::vector<Guideline> (*guidance)(const GrantedTools& granted) = nullptr;
};

}  // namespace moat::tools
