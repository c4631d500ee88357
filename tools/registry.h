// tools/registry.h: the tool set: specs for `welcome`, execution in moatd, and the handler
// that runs file operations inside a sandbox worker.
#pragma once

#include <nlohmann/json.hpp>

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tools/mutation_queue.h"
#include "tools/runner.h"
#include "tools/tool.h"

namespace moat::tools {

// Every tool moat has, in a fixed order (the order the model sees them).
const std::vector<ToolSpec>& all_tools();
const ToolSpec* find_tool(std::string_view name);

enum class PathAccess { kRead, kWrite };

// Everything one call needs from moatd.
struct CallContext {
  SandboxRunner* runner = nullptr;
  std::string workspace;  // the sandbox path of the workspace (same as the host path)
  // Checks the policy for a canonical sandbox path; returns the refusal message, or
  // nullopt when allowed. moatd writes the decision to the audit log before returning.
  std::function<std::optional<std::string>(const std::string& path, PathAccess access)> authorize;
  std::function<void(std::string_view chunk)> progress;  // streamed output (bash)
  const std::atomic<bool>* cancel = nullptr;
  double default_timeout_s = 120;        // from the policy's resources
  // The policy's per-call wall time (0 = none): a timeout the model asks for is capped to it,
  // so an argument cannot extend a limit the policy sets (the sandbox caps it again).
  double max_timeout_s = 0;
  std::uint64_t output_ceiling = 16ull << 20;  // bash: bytes before the command is killed
  // edit/write are serialised per canonical path through this queue (one per moatd;
  // nullptr = MutationQueue::process_default()).
  MutationQueue* mutations = nullptr;
  // The call's place in request order. moatd sets it with take_mutation_ticket() in the
  // thread that reads the calls, before starting execute() in its own thread; when empty,
  // execute() takes one on entry.
  std::shared_ptr<MutationQueue::Ticket> mutation_ticket;
  // grep/find use rg/fdfind when the sandbox has them; false forces the built-in back ends
  // (their output is identical; tests run both).
  bool use_external_search = true;
};

// For a mutating tool (spec.mutates), takes the call's place in the mutation queue now, so
// calls keep the order they arrived in even though each runs on its own thread.
void take_mutation_ticket(const std::string& tool, CallContext& ctx);

// What the policy judges for a call besides the tool's name: the command line of a tool that
// runs one (bash's `command`), else nullopt. moatd asks this instead of knowing tools by name.
std::optional<std::string> command_to_judge(std::string_view tool, const nlohmann::json& args);

// Validates the arguments against the tool's schema (after the deterministic repair) and
// runs it. Every failure is a ToolResult with is_error set, never an exception.
ToolResult execute(const std::string& tool, const nlohmann::json& arguments, CallContext& ctx);

// The sandbox worker's handler (sandbox::WorkerHandler): a JSON request in, a JSON
// response out, executed inside the session's mount namespace after every restriction.
std::string handle_in_sandbox(std::string_view request);

}  // namespace moat::tools
