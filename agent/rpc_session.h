// agent/rpc_session.h: the loop's side of `moat run --rpc`: each prompt runs the loop on the
// one session, one prompt at a time; steer, follow_up and abort act on the running one,
// get_state and set_model on the session. The console (agent/console.h) has checked every
// line and answers moatd's questions itself; the lines that reach the loop are commands.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "agent/events.h"
#include "agent/loop.h"
#include "base/result.h"
#include "base/stop_flags.h"
#include "sessions/store.h"

namespace moat::agent {

// A model `set_model` switches to: its provider, its prices and its limits.
struct ModelChoice {
  std::unique_ptr<Provider> provider;
  providers::Pricing pricing;       // for each answer's cost
  std::int64_t context_window = 0;  // 0: unknown (the run's setting stays)
  std::int64_t max_output = 0;
};

struct RpcSessionParts {
  std::unique_ptr<Provider> provider;
  std::string model;  // as given to --model or set_model
  sessions::SessionStore* store = nullptr;
  std::string system_prompt;
  std::vector<tools::ToolSpec> tools;
  LoopConfig config;
  CallTool call_tool;
  RunEvents* events = nullptr;
  RunCancel* cancel = nullptr;  // the person's cancel (abort; also SIGINT), renewed per prompt
  nlohmann::json records;       // session_file and audit_log, for each result
  // Opens a model for set_model (prepared before the loop lost the right to read the
  // configuration).
  std::function<Result<ModelChoice>(const std::string& spec)> open_model;
  std::function<int(LoopStop)> exit_code;
};

// The line the console hands the loop for a checked command: its input line number, a
// space, the command's text, LF.
std::string rpc_forward_line(std::uint64_t line, std::string_view text);

// Serves the console's lines from `in_fd` until it ends and no prompt runs. Returns the exit
// code of the last prompt's run (0 when none ran).
int serve_rpc(RpcSessionParts parts, int in_fd);

}  // namespace moat::agent
