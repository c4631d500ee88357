// tools/registry.h: the tool set (one row per tool, tools/tool_row.h) and what the rest of
// moat asks of it: specs for `welcome`, execution in moatd, the handler that runs file
// operations inside a sandbox worker, and the per-tool facts the supervisor, the transcript,
// compaction and the system prompt need, so none of them compares a tool's name.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tools/call_context.h"
#include "tools/tool.h"
#include "tools/tool_row.h"

namespace moat::tools {

// Every tool moat has, in a fixed order (the order the model sees them).
const std::vector<const Tool*>& tool_table();
const Tool* row_of(std::string_view name);

// The specs of every tool for a session with these limits, in table order.
std::vector<ToolSpec> all_tools(const ToolLimits& limits);
// ... with the default limits (what a client shows before moatd announced the session's).
const std::vector<ToolSpec>& all_tools();
const ToolSpec* find_tool(std::string_view name);

// The command line the policy judges for this call besides the tool's name (bash's
// `command`), or nullopt when the tool is judged by name and by the paths it touches.
std::optional<std::string> command_to_judge(std::string_view tool, const nlohmann::json& args);

// One line for the transcript: the command line; for a file tool the file (edit: and how many
// edits); else the arguments as key=value words (issue 27 item 18: `read calc/core.py`).
std::string call_summary(std::string_view tool, const nlohmann::json& args);

// The one file a call reads or changes, as its arguments name it (compaction's file lists).
struct TouchedFile {
  std::string path;
  bool changed = false;  // edit, write; false: read
};
std::optional<TouchedFile> touched_file(std::string_view tool, const nlohmann::json& args);

// The whole content a call writes its file with, for a tool that creates or replaces its file
// from its arguments (write's `content`); nullopt for any other call (the console's /diff).
std::optional<std::string> written_content(std::string_view tool, const nlohmann::json& args);

// The system prompt's guidelines for the granted tools, each line there because a tool of
// the set exists (or is missing), in the order the prompt reads them.
std::vector<std::string> guidelines(const std::vector<std::string>& granted);

// The call that runs a command line with the command-running tool (moat sandbox exec).
struct CommandCall {
  std::string tool;
  nlohmann::json arguments;
};
CommandCall command_call(const std::string& line, double timeout_s);

// The deterministic repair of a call's arguments: the schema's generic one, then the tool's
// own (its row's `repair`). Appends what was done to `notes`.
nlohmann::json repair_arguments(std::string_view tool, nlohmann::json args,
                                std::vector<std::string>* notes);

// For a mutating tool (spec.mutates), takes the call's place in the mutation queue now, so
// calls keep the order they arrived in even though each runs on its own thread.
void take_mutation_ticket(const std::string& tool, CallContext& ctx);

// Validates the arguments against the tool's schema (after the deterministic repair) and
// runs it. Every failure is a ToolResult with is_error set, never an exception.
ToolResult execute(const std::string& tool, const nlohmann::json& arguments, CallContext& ctx);

// The sandbox worker's handler (sandbox::WorkerHandler): a JSON request in, a JSON
// response out, executed inside the session's mount namespace after every restriction.
std::string handle_in_sandbox(std::string_view request);

}  // namespace moat::tools
