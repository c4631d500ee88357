// tools/call_context.h: what one tool call needs from moatd (the runner, the policy's
// judgement of a path, the limits, the mutation queue), so tools/ includes nothing of moatd.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "tools/mutation_queue.h"
#include "tools/runner.h"
#include "tools/tool.h"

namespace moat::tools {

enum class PathAccess { kRead, kWrite };

struct CallContext {
  SandboxRunner* runner = nullptr;
  std::string workspace;  // the sandbox path of the workspace (same as the host path)
  // Checks the policy for a canonical sandbox path; returns the refusal message, or
  // nullopt when allowed. moatd writes the decision to the audit log before returning.
  std::function<std::optional<std::string>(const std::string& path, PathAccess access)> authorize;
  std::function<void(std::string_view chunk)> progress;  // streamed output (bash)
  const std::atomic<bool>* cancel = nullptr;
  int cancel_wake = -1;  // an eventfd made readable when *cancel is raised (CallCancel), -1: none
  ToolLimits limits;  // from the policy's resources, as the specs state them
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

}  // namespace moat::tools
