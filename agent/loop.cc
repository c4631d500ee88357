// agent/loop.cc: the agent loop. Reads top to bottom: model, calls, execute, persist, stop.
#include "agent/loop.h"

#include "agent/compaction.h"
#include "sessions/context.h"

#include <chrono>
#include <future>
#include <map>

namespace moat::agent {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

struct ToolCall {
  std::string id;
  std::string name;
  json arguments;
  bool incomplete = false;  // the provider could not parse its arguments (cut off, bad JSON)
};

std::vector<ToolCall> tool_calls_of(const Message& m) {
  std::vector<ToolCall> calls;
  if (!m.contains("content") || !m["content"].is_array()) return calls;
  for (const auto& b : m["content"]) {
    if (b.value("type", "") != "toolCall") continue;
    calls.push_back({b.value("id", ""), b.value("name", ""), b.value("arguments", json::object()),
                     b.value("incomplete", false)});
  }
  return calls;
}

Message tool_result_message(const ToolCall& call, const tools::ToolResult& r) {
  return {{"role", "toolResult"}, {"toolCallId", call.id}, {"toolName", call.name},
          {"content", r.content}, {"isError", r.is_error}};
}

std::string first_text(const tools::ToolResult& r) {
  for (const auto& b : r.content)
    if (b.value("type", "") == "text") return b.value("text", "");
  return {};
}

std::uint64_t tokens_of(const Message& m) {
  if (!m.contains("usage") || !m["usage"].is_object()) return 0;
  std::uint64_t n = 0;
  for (const char* k : {"input", "output", "cacheRead", "cacheWrite"})
    if (m["usage"].contains(k) && m["usage"][k].is_number_unsigned())
      n += m["usage"][k].get<std::uint64_t>();
  return n;
}

double cost_of(const Message& m) {
  if (m.contains("cost") && m["cost"].is_object() && m["cost"].contains("total") &&
      m["cost"]["total"].is_number())
    return m["cost"]["total"].get<double>();
  return 0;
}

// Slot 2's rule for an answer cut off by the output limit: its calls may hold half-written
// arguments, so none runs; each gets an error that says how to recover.
std::vector<tools::ToolResult> refuse_cut_off_calls(const std::vector<ToolCall>& calls) {
  std::vector<tools::ToolResult> out;
  for (const auto& c : calls)
    out.push_back(tools::ToolResult::error(
        "Not executed: your answer was cut off by the output token limit, so the arguments of " +
        c.name + " may be incomplete. Re-issue the call with complete arguments, or split the "
                 "work into smaller calls."));
  return out;
}

// Slot 4: the batch runs concurrently in moatd unless one of its tools is sequential;
// results come back in call order whatever order they finish in.
std::vector<tools::ToolResult> execute_batch(const std::vector<ToolCall>& calls,
                                             const std::vector<tools::ToolSpec>& tools,
                                             const CallTool& call_tool,
                                             const std::atomic<bool>* cancel) {
  bool sequential = false;
  for (const auto& c : calls)
    for (const auto& t : tools)
      if (t.name == c.name && t.sequential) sequential = true;
  std::vector<tools::ToolResult> results(calls.size());
  // Arguments the provider could not parse never reach moatd: the model re-issues them.
  auto run_one = [&call_tool, cancel](const ToolCall& c) {
    if (c.incomplete)
      return tools::ToolResult::error("Not executed: the arguments of this " + c.name +
                                      " call are not valid JSON. Re-issue it with complete, "
                                      "valid arguments.");
    return call_tool(c.id, c.name, c.arguments, cancel);
  };
  if (sequential || calls.size() == 1) {
    for (std::size_t i = 0; i < calls.size(); ++i) results[i] = run_one(calls[i]);
    return results;
  }
  std::vector<std::future<tools::ToolResult>> futures;
  for (const auto& c : calls)
    futures.push_back(std::async(std::launch::async, [&run_one, &c] { return run_one(c); }));
  for (std::size_t i = 0; i < calls.size(); ++i) results[i] = futures[i].get();
  return results;
}

// Remembers failing calls; the same call failing the same way is a loop the model is
// stuck in. Returns how many times this exact failure has now been seen.
class RepetitionTracker {
 public:
  int record(const ToolCall& c, const tools::ToolResult& r) {
    if (!r.is_error) return 0;
    return ++seen_[c.name + "\x1f" + c.arguments.dump() + "\x1f" + first_text(r)];
  }

 private:
  std::map<std::string, int> seen_;
};

CompactionSettings compaction_settings(const LoopConfig& c) {
  CompactionSettings s;
  s.reserve_tokens = c.compaction_reserve;
  s.keep_recent_tokens = c.compaction_keep_recent;
  return s;
}

// What the context occupies after this answer: its whole prompt plus what it produced.
std::int64_t used_tokens(const Message& m) {
  if (!m.contains("usage") || !m["usage"].is_object()) return 0;
  std::int64_t n = 0;
  for (const char* k : {"input", "output", "cacheRead", "cacheWrite"})
    if (m["usage"].contains(k) && m["usage"][k].is_number_integer())
      n += m["usage"][k].get<std::int64_t>();
  return n;
}

}  // namespace

std::vector<Message> context_messages(const sessions::SessionStore& store) {
  // The context as storage defines it: a compaction's summary and retained tail stand in
  // for what it summarised; branch summaries are included (sessions/context.h).
  return sessions::build_context(store).for_provider();
}

LoopOutcome run_loop(Provider& provider, const CallTool& call_tool, sessions::SessionStore& store,
                     const std::string& system_prompt, const std::vector<tools::ToolSpec>& tools,
                     const LoopConfig& config, const LoopEvents& events,
                     const std::atomic<bool>* cancel) {
  LoopOutcome out;
  const auto started = Clock::now();
  RepetitionTracker repetition;
  auto note = [&](const std::string& s) {
    if (events.on_note) events.on_note(s);
  };
  for (;;) {
    if (cancel != nullptr && cancel->load()) {
      out.stop = LoopStop::kCancelled;
      out.detail = "cancelled";
      return out;
    }
    // Slot 1: call the model with system + tools + the context.
    ModelRequest request{system_prompt, tools, context_messages(store), config.max_output_tokens};
    StreamCallbacks stream;
    stream.on_text = events.on_text;
    auto answer = provider.complete(request, stream, cancel);
    // A context-overflow error gets one compaction and one retry.
    if (!answer && config.context_window > 0 && is_context_overflow(answer.error())) {
      note("the context did not fit: compacting and retrying once");
      if (auto c = compact_now(store, compaction_settings(config), summarizer_for(provider, cancel)); c)
        answer = provider.complete(
            ModelRequest{system_prompt, tools, context_messages(store), config.max_output_tokens},
            stream, cancel);
    }
    if (!answer) {
      out.stop = LoopStop::kProviderError;
      out.detail = answer.error().message();
      return out;
    }
    Message assistant = std::move(*answer);
    if (events.on_answer) events.on_answer(assistant);
    ++out.turns;
    out.total_tokens += tokens_of(assistant);
    out.cost += cost_of(assistant);
    // Slot 5 for the answer: persisted before anything it asks for runs.
    if (auto r = store.append({{"type", "message"}, {"message", assistant}}); !r) {
      out.stop = LoopStop::kProviderError;
      out.detail = "session store: " + r.error().message();
      return out;
    }

    // Slot 2: take the calls.
    const std::vector<ToolCall> calls = tool_calls_of(assistant);
    const bool cut_off = assistant.value("stopReason", "") == "length";
    if (assistant.value("stopReason", "") == "aborted") {
      (void)store.sync();
      out.stop = LoopStop::kCancelled;
      out.detail = "the model call was cancelled";
      return out;
    }
    if (calls.empty()) {
      (void)store.sync();
      if (cut_off) {
        out.stop = LoopStop::kGate;
        out.detail = "the answer was cut off by the output token limit";
        return out;
      }
      out.stop = LoopStop::kDone;  // Slot 3: no more calls means done.
      return out;
    }
    if (events.on_call)
      for (const auto& c : calls) events.on_call(c.name, c.arguments);

    // Slot 4: execute (or refuse, when cut off).
    std::vector<tools::ToolResult> results =
        cut_off ? refuse_cut_off_calls(calls) : execute_batch(calls, tools, call_tool, cancel);

    bool all_terminate = !results.empty();
    int worst_repeat = 0;
    for (std::size_t i = 0; i < calls.size(); ++i) {
      int seen = repetition.record(calls[i], results[i]);
      worst_repeat = std::max(worst_repeat, seen);
      if (seen >= config.repeat_warn)
        results[i].content.push_back(
            {{"type", "text"},
             {"text", "This exact call has now failed the same way " + std::to_string(seen) +
                          " times. Do not repeat it: change your approach."}});
      if (!(results[i].details.is_object() && results[i].details.value("terminate", false)))
        all_terminate = false;
      if (events.on_result) events.on_result(calls[i].name, results[i]);
      // Slot 5: results persisted in call order.
      if (auto r = store.append({{"type", "message"},
                                 {"message", tool_result_message(calls[i], results[i])}});
          !r) {
        out.stop = LoopStop::kProviderError;
        out.detail = "session store: " + r.error().message();
        return out;
      }
    }
    (void)store.sync();  // the end of a turn: everything acknowledged is on disk
    if (config.context_window > 0) {
      auto compacted = compact_if_needed(store, used_tokens(assistant), config.context_window,
                                         compaction_settings(config),
                                         summarizer_for(provider, cancel));
      if (!compacted) note("compaction failed: " + compacted.error().message());
      else if (*compacted) note("the context was compacted");
    }

    // Slot 3: stop rules, only now that the results are persisted.
    if (all_terminate) {
      out.stop = LoopStop::kTerminated;
      out.detail = "every tool of the last batch asked to stop";
      return out;
    }
    if (config.repeat_limit > 0 && worst_repeat >= config.repeat_limit) {
      out.stop = LoopStop::kRepetition;
      out.detail = "the same call failed the same way " + std::to_string(worst_repeat) + " times";
      return out;
    }
    std::string gate;
    if (config.max_turns > 0 && out.turns >= config.max_turns)
      gate = "max turns (" + std::to_string(config.max_turns) + ") reached";
    else if (config.max_total_tokens > 0 && out.total_tokens >= config.max_total_tokens)
      gate = "token budget (" + std::to_string(config.max_total_tokens) + ") reached";
    else if (config.max_cost > 0 && out.cost >= config.max_cost)
      gate = "cost budget reached";
    else if (config.max_wall_s > 0 &&
             std::chrono::duration<double>(Clock::now() - started).count() >= config.max_wall_s)
      gate = "wall-time budget reached";
    if (!gate.empty()) {
      note(gate);
      out.stop = LoopStop::kGate;
      out.detail = gate;
      return out;
    }
  }
}

}  // namespace moat::agent
