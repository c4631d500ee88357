// agent/loop.h: the agent loop, slots 1–5 of DESIGN.md: call the model, take the calls,
// decide to stop, execute through moatd, persist.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "agent/provider.h"
#include "sessions/store.h"
#include "tools/tool.h"

namespace moat::agent {

// Host gates, checked only after a batch's results are persisted (0 = no gate).
struct LoopConfig {
  int max_turns = 50;
  std::uint64_t max_total_tokens = 0;
  double max_cost = 0;
  double max_wall_s = 0;
  int repeat_warn = 3;   // the same failing call this many times: tell the model to change
  int repeat_limit = 6;  // ...and this many times: stop the run
  int max_output_tokens = 8192;
  // Compaction (0 = off): when the last answer's prompt + output passes
  // context_window - reserve, the model summarises the older context (agent/compaction.h).
  std::int64_t context_window = 0;
  std::int64_t compaction_reserve = 16384;
  std::int64_t compaction_keep_recent = 20000;
};

// How the loop runs one tool call (moatd, via MoatdClient::call, in production); a stop of
// `cancel` (the person's, or --max-wall's) ends it.
using CallTool = std::function<tools::ToolResult(const std::string& id, const std::string& tool,
                                                 const nlohmann::json& arguments,
                                                 std::stop_token cancel)>;

// What the loop reports (agent/events.h turns each into an event); every callback may be
// empty. Called on the loop's thread, in this order within a turn.
struct LoopEvents {
  std::function<void(int turn)> on_turn_start;  // turns count from 1
  std::function<void(std::string_view)> on_text;
  // Called with each answer before it is persisted: the host adds its cost and the
  // cache-miss audit (usage accounting lives with the provider's prices, not here).
  std::function<void(Message& answer)> on_answer;
  std::function<void(const std::string& id, const std::string& tool, const nlohmann::json& args)>
      on_call;
  // As each call ends (a batch's calls run concurrently: from the thread that ran it, in the
  // order they end); `took` is the call's own time.
  std::function<void(const std::string& id, const std::string& tool,
                     const tools::ToolResult& result, std::chrono::milliseconds took)>
      on_result;
  std::function<void(int turn)> on_turn_end;
  std::function<void(const std::string& note)> on_note;    // repetition, compaction, delivery
  std::function<void(const std::string& reason)> on_gate;  // a gate or the repetition rule stops it
  std::function<void(const std::string& message)> on_error;  // the provider or the store failed
  // Before the provider retries a failed request (attempt 1 = first retry).
  std::function<void(int attempt, std::chrono::milliseconds delay, std::string_view reason)>
      on_retry;
};

// What the person says while the loop works (pi's steer() and followUp()). Thread-safe:
// any thread may add; the loop takes.
//  - A steering message is delivered after the current batch: once the batch's results are
//    persisted, every queued one is appended (in order) as a user message, so the next model
//    request carries it after the tool results. One that arrives while the model writes its
//    final answer is delivered then instead, and the run goes on.
//  - A follow-up waits until the agent would otherwise stop (the model answered without
//    calls): the oldest one is appended as a user message and the run goes on, one per stop.
// Gates (turns, tokens, cost, wall time, repetition) still stop the run; a steering message
// delivered just before a gate stays in the session, so a resumed run answers it.
class Inbox {
 public:
  void steer(std::string text);
  void follow_up(std::string text);
  std::vector<std::string> take_steering();
  std::optional<std::string> take_follow_up();

 private:
  std::mutex mu_;
  std::deque<std::string> steering_;
  std::deque<std::string> follow_ups_;
};

enum class LoopStop {
  kDone,           // the model answered without tool calls
  kGate,           // a host gate stopped it (turns, tokens, cost, wall time)
  kRepetition,     // the same failing call too many times
  kProviderError,  // the model call failed
  kStoreError,     // the session store could not save a message (the disk, not the model)
  kCancelled,      // the person cancelled
  kTerminated,     // every tool of the last batch suggested stopping
};

struct LoopOutcome {
  LoopStop stop = LoopStop::kDone;
  std::string detail;
  int turns = 0;
  std::uint64_t total_tokens = 0;
  double cost = 0;
};

// Runs until a stop rule fires. The task must already be the session's last user message.
// `inbox` (may be null) carries steering messages and follow-ups. A stop of `cancel` (the
// person's) reaches the model request and the running calls at once, through their callbacks.
LoopOutcome run_loop(Provider& provider, const CallTool& call_tool, sessions::SessionStore& store,
                     const std::string& system_prompt, const std::vector<tools::ToolSpec>& tools,
                     const LoopConfig& config, const LoopEvents& events, std::stop_token cancel,
                     Inbox* inbox = nullptr);

// The context for the next model call: the messages on the root-to-leaf path.
// It refers to the store's entries (no copy): valid while the store lives.
sessions::MessageList context_messages(const sessions::SessionStore& store);

}  // namespace moat::agent
