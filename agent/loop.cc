// agent/loop.cc: the agent loop. Reads top to bottom: model, calls, execute, persist, stop.
#include "agent/loop.h"

#include "agent/compaction.h"
#include "sessions/context.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <stop_token>
#include <thread>

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
  return {{"role", "toolResult"},
          {"toolCallId", call.id},
          {"toolName", call.name},
          {"content", r.content},
          {"isError", r.is_error}};
}

std::string first_text(const tools::ToolResult& r) {
  for (const auto& b : r.content)
    if (b.value("type", "") == "text") return b.value("text", "");
  return {};
}

double cost_of(const Message& m) {
  if (m.contains("cost") && m["cost"].is_object() && m["cost"].contains("total") &&
      m["cost"]["total"].is_number())
    return m["cost"]["total"].get<double>();
  return 0;
}

// A call's result and the time it took.
struct Ran {
  tools::ToolResult result;
  std::chrono::milliseconds took{0};
};

// Slot 2's rule for an answer cut off by the output limit: its calls may hold half-written
// arguments, so none runs; each gets an error that says how to recover.
std::vector<Ran> refuse_cut_off_calls(const std::vector<ToolCall>& calls) {
  std::vector<Ran> out;
  for (const auto& c : calls)
    out.push_back(
        {tools::ToolResult::error(
             "Not executed: your answer was cut off by the output token limit, so the arguments "
             "of " +
             c.name +
             " may be incomplete. Re-issue the call with complete arguments, or split the "
             "work into smaller calls."),
         {}});
  return out;
}

// Slot 4: the batch runs concurrently in moatd unless one of its tools is sequential;
// results come back in call order whatever order they finish in. `ended` hears of each call
// as it ends (from the thread that ran it), so a view folds it while its siblings still run.
std::vector<Ran> execute_batch(const std::vector<ToolCall>& calls,
                               const std::vector<tools::ToolSpec>& tools, const CallTool& call_tool,
                               std::stop_token cancel,
                               const std::function<void(const ToolCall&, const Ran&)>& ended) {
  bool sequential = false;
  for (const auto& c : calls)
    for (const auto& t : tools)
      if (t.name == c.name && t.sequential) sequential = true;
  std::vector<Ran> results(calls.size());
  // Arguments the provider could not parse never reach moatd: the model re-issues them.
  auto run_one = [&call_tool, cancel, &ended](const ToolCall& c) {
    Ran r;
    if (c.incomplete) {
      r.result = tools::ToolResult::error("Not executed: the arguments of this " + c.name +
                                          " call are not valid JSON. Re-issue it with complete, "
                                          "valid arguments.");
    } else {
      const auto t0 = Clock::now();
      r.result = call_tool(c.id, c.name, c.arguments, cancel);
      r.took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0);
    }
    ended(c, r);
    return r;
  };
  if (sequential || calls.size() == 1) {
    for (std::size_t i = 0; i < calls.size(); ++i) results[i] = run_one(calls[i]);
    return results;
  }
  std::vector<std::future<Ran>> futures;
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

Message user_message(const std::string& text) {
  return {{"role", "user"}, {"content", {{{"type", "text"}, {"text", text}}}}};
}

// --max-wall is a hard limit, not only a gate between turns: a watchdog stops the run's token
// when the budget is spent (or when the person cancels), which cancels the model request and
// the running calls alike; the run then ends with the gate's message. It waits for the
// deadline, the person's cancel (a stop_callback wakes it) or the run's end (its jthread's
// stop), whichever comes first: no tick. Without a budget the person's token is used as it
// is, and no thread is started.
class WallWatch {
 public:
  WallWatch(std::stop_token person, double max_wall_s, Clock::time_point started)
      : person_(std::move(person)) {
    if (max_wall_s <= 0) return;
    const auto deadline = started + std::chrono::duration_cast<Clock::duration>(
                                        std::chrono::duration<double>(max_wall_s));
    thread_ = std::jthread([this, deadline](std::stop_token done) { watch(deadline, done); });
  }
  // What every model request and call of the run waits on.
  std::stop_token stop_token() const {
    return thread_.joinable() ? stop_.get_token() : person_;
  }
  bool expired() const { return expired_.load(); }

 private:
  void watch(Clock::time_point deadline, const std::stop_token& done) {
    std::mutex mu;
    std::condition_variable_any cv;
    const std::stop_callback wake(person_, [&] {
      std::lock_guard<std::mutex> lock(mu);
      cv.notify_all();
    });
    std::unique_lock<std::mutex> lock(mu);
    if (cv.wait_until(lock, done, deadline, [&] { return person_.stop_requested(); })) {
      stop_.request_stop();
    } else if (!done.stop_requested()) {
      expired_ = true;
      stop_.request_stop();
    }
  }

  const std::stop_token person_;  // the person's cancel
  std::stop_source stop_;
  std::atomic<bool> expired_{false};
  std::jthread thread_;  // last: it stops and is joined before the members it reads go
};

constexpr const char* kWallGate = "wall-time budget reached";

// Slot 3's host gates, in the order they are reported; "" when none is reached.
std::string gate_reached(const LoopConfig& config, const LoopOutcome& out,
                         Clock::time_point started) {
  if (config.max_turns > 0 && out.turns >= config.max_turns)
    return "max turns (" + std::to_string(config.max_turns) + ") reached";
  if (config.max_total_tokens > 0 && out.total_tokens >= config.max_total_tokens)
    return "token budget (" + std::to_string(config.max_total_tokens) + ") reached";
  if (config.max_cost > 0 && out.cost >= config.max_cost) return "cost budget reached";
  if (config.max_wall_s > 0 &&
      std::chrono::duration<double>(Clock::now() - started).count() >= config.max_wall_s)
    return kWallGate;
  return "";
}

// Slot 1: system + tools + the context. A context-overflow error gets one compaction and
// one retry.
Result<Message> call_model(Provider& provider, sessions::SessionStore& store,
                           const std::string& system_prompt,
                           const std::vector<tools::ToolSpec>& tools, const LoopConfig& config,
                           const LoopEvents& events, std::stop_token cancel) {
  StreamCallbacks stream;
  stream.on_text = events.on_text;
  stream.on_retry = events.on_retry;
  auto answer = provider.complete(
      {system_prompt, tools, context_messages(store), config.max_output_tokens}, stream, cancel);
  if (!answer && config.context_window > 0 && is_context_overflow(answer.error())) {
    if (events.on_note) events.on_note("the context did not fit: compacting and retrying once");
    if (auto c = compact_now(store, compaction_settings(config), summarizer_for(provider, cancel));
        c)
      answer = provider.complete(
          {system_prompt, tools, context_messages(store), config.max_output_tokens}, stream,
          cancel);
  }
  return answer;
}

// What a batch's results say about stopping.
struct BatchVerdict {
  bool all_terminate = false;  // every result suggested stopping
  int worst_repeat = 0;        // the most times one of its failures has been seen
};

// Slot 5 for the results, in call order; a failure seen repeat_warn times gets a note
// telling the model to change its approach (and the person, in a note event: the call's end
// event went out when it ended).
Result<BatchVerdict> persist_results(const std::vector<ToolCall>& calls, std::vector<Ran>& ran,
                                     RepetitionTracker& repetition, const LoopConfig& config,
                                     const LoopEvents& events, sessions::SessionStore& store) {
  BatchVerdict v;
  v.all_terminate = !ran.empty();
  for (std::size_t i = 0; i < calls.size(); ++i) {
    tools::ToolResult& result = ran[i].result;
    const int seen = repetition.record(calls[i], result);
    v.worst_repeat = std::max(v.worst_repeat, seen);
    if (seen >= config.repeat_warn) {
      const std::string warning = "This exact call has now failed the same way " +
                                  std::to_string(seen) + " times. Do not repeat it: change your " +
                                  "approach.";
      result.content.push_back({{"type", "text"}, {"text", warning}});
      if (events.on_note) events.on_note(calls[i].name + " (" + calls[i].id + "): " + warning);
    }
    if (!(result.details.is_object() && result.details.value("terminate", false)))
      v.all_terminate = false;
    MOAT_TRY(
        store.append({{"type", "message"}, {"message", tool_result_message(calls[i], result)}}));
  }
  return v;
}

// When the model stops: what the person typed meanwhile (all of it), else the next
// follow-up (one), with what to call it.
std::pair<std::vector<std::string>, const char*> said_at_the_end(Inbox* inbox) {
  if (inbox == nullptr) return {{}, ""};
  if (auto steering = inbox->take_steering(); !steering.empty())
    return {std::move(steering), "steering message"};
  if (auto f = inbox->take_follow_up()) return {{std::move(*f)}, "follow-up"};
  return {{}, ""};
}

// Slot 5's compaction, once the turn is on disk (agent/compaction.h).
void compact_after_turn(Provider& provider, sessions::SessionStore& store, const Message& answer,
                        const LoopConfig& config, const LoopEvents& events,
                        std::stop_token cancel) {
  auto compacted = compact_if_needed(store, used_tokens(answer), config.context_window,
                                     compaction_settings(config), summarizer_for(provider, cancel));
  if (!events.on_note) return;
  if (!compacted) events.on_note("compaction failed: " + compacted.error().message());
  else if (*compacted) events.on_note("the context was compacted");
}

// One run of the loop: what it was given and what it has counted so far. Each step returns the
// run's outcome when it ends the run, std::nullopt when the run goes on.
class Run {
 public:
  Run(Provider& provider, const CallTool& call_tool, sessions::SessionStore& store,
      const std::string& system_prompt, const std::vector<tools::ToolSpec>& tools,
      const LoopConfig& config, const LoopEvents& events, std::stop_token cancel,
      Inbox* inbox)
      : provider_(provider),
        call_tool_(call_tool),
        store_(store),
        system_prompt_(system_prompt),
        tools_(tools),
        config_(config),
        events_(events),
        cancel_(cancel),
        inbox_(inbox),
        wall_(cancel, config.max_wall_s, started_) {}

  LoopOutcome until_stopped() {
    for (;;)
      if (Next end = turn()) return std::move(*end);
  }

 private:
  using Next = std::optional<LoopOutcome>;

  Next turn() {
    if (Next end = stop_requested()) return end;  // the wall budget or the person's cancel
    const int n = out_.turns + 1;
    if (events_.on_turn_start) events_.on_turn_start(n);
    Next end = turn_steps();
    if (events_.on_turn_end) events_.on_turn_end(n);
    return end;
  }

  // One turn, in the order of DESIGN.md's slots.
  Next turn_steps() {
    if (Next end = take_answer()) return end;     // slot 1: counted, persisted before it acts
    const std::vector<ToolCall> calls = tool_calls_of(answer_);  // slot 2
    if (answer_.value("stopReason", "") == "aborted")
      return stop_synced(LoopStop::kCancelled, "the model call was cancelled");
    if (calls.empty()) return answered_without_calls();  // slot 3: done, or the person goes on
    return run_batch(calls);                             // slots 4 and 5, then slot 3's stop rules
  }

  Next stop_requested() {
    if (wall_.expired()) return wall_gate();
    if (cancel_.stop_requested()) return stop(LoopStop::kCancelled, "cancelled");
    return std::nullopt;
  }

  // Slot 1 (call_model), and slot 5 for the answer: persisted before anything it asks for runs.
  Next take_answer() {
    auto answer =
        call_model(provider_, store_, system_prompt_, tools_, config_, events_, wall_.stop_token());
    if (wall_.expired()) return wall_gate();  // the request was cut short by the budget
    // A provider's Error::code is the HTTP status, not an errno: its context says it all
    // (agent/provider.h), and message() would add strerror(status).
    if (!answer) return stop(LoopStop::kProviderError, answer.error().context);
    answer_ = std::move(*answer);
    if (events_.on_answer) events_.on_answer(answer_);
    ++out_.turns;
    out_.total_tokens +=
        static_cast<std::uint64_t>(std::max<std::int64_t>(0, used_tokens(answer_)));
    out_.cost += cost_of(answer_);
    if (auto r = store_.append({{"type", "message"}, {"message", answer_}}); !r)
      return store_failed(r.error());
    return std::nullopt;
  }

  // Slot 3 for an answer without calls: the model is done, unless its answer was cut off or
  // the person has more to say.
  Next answered_without_calls() {
    if (is_cut_off())
      return stop_synced(LoopStop::kGate, "the answer was cut off by the output token limit");
    auto [more, kind] = said_at_the_end(inbox_);
    if (Next end = deliver(more, kind)) return end;
    (void)store_.sync();
    if (more.empty()) return stop(LoopStop::kDone, "");
    return host_gate();
  }

  Next run_batch(const std::vector<ToolCall>& calls) {
    if (events_.on_call)
      for (const auto& c : calls) events_.on_call(c.id, c.name, c.arguments);
    // Slot 4: execute (or refuse, when cut off); slot 5: persist the results.
    auto ended = [this](const ToolCall& c, const Ran& r) {
      if (events_.on_result) events_.on_result(c.id, c.name, r.result, r.took);
    };
    std::vector<Ran> ran;
    if (is_cut_off()) {
      ran = refuse_cut_off_calls(calls);
      for (std::size_t i = 0; i < calls.size(); ++i) ended(calls[i], ran[i]);
    } else {
      ran = execute_batch(calls, tools_, call_tool_, wall_.stop_token(), ended);
    }
    auto verdict = persist_results(calls, ran, repetition_, config_, events_, store_);
    if (!verdict) return store_failed(verdict.error());
    // What the person typed during the batch goes right after its results.
    const std::vector<std::string> steering =
        inbox_ ? inbox_->take_steering() : std::vector<std::string>{};
    if (Next end = deliver(steering, "steering message")) return end;
    (void)store_.sync();  // the end of a turn: everything acknowledged is on disk
    if (config_.context_window > 0)
      compact_after_turn(provider_, store_, answer_, config_, events_, wall_.stop_token());
    return after_batch(*verdict, !steering.empty());
  }

  // Slot 3's stop rules, only now that the results are persisted. A tool's suggestion to stop
  // yields to the person, who just said something the model has not answered.
  Next after_batch(const BatchVerdict& verdict, bool person_spoke) {
    if (verdict.all_terminate && !person_spoke)
      return stop(LoopStop::kTerminated, "every tool of the last batch asked to stop");
    if (config_.repeat_limit > 0 && verdict.worst_repeat >= config_.repeat_limit)
      return stop(LoopStop::kRepetition, "the same call failed the same way " +
                                             std::to_string(verdict.worst_repeat) + " times");
    return host_gate();
  }

  // Appends the person's messages as user messages.
  Next deliver(const std::vector<std::string>& texts, const char* kind) {
    for (const auto& text : texts) {
      if (auto r = store_.append({{"type", "message"}, {"message", user_message(text)}}); !r)
        return store_failed(r.error());
      note(std::string(kind) + " delivered to the model");
    }
    return std::nullopt;
  }

  Next host_gate() {
    const std::string gate = gate_reached(config_, out_, started_);
    if (gate.empty()) return std::nullopt;
    return stop(LoopStop::kGate, gate);
  }

  Next wall_gate() {
    (void)store_.sync();
    return stop(LoopStop::kGate, kWallGate);
  }

  Next store_failed(const Error& e) {
    return stop(LoopStop::kStoreError, "session store: " + e.message());
  }

  Next stop_synced(LoopStop why, std::string detail) {
    (void)store_.sync();
    return stop(why, std::move(detail));
  }

  // Every end of the run passes here: a gate or an error is reported once, as it stops it.
  Next stop(LoopStop why, std::string detail) {
    const bool gate = why == LoopStop::kGate || why == LoopStop::kRepetition;
    const bool error = why == LoopStop::kProviderError || why == LoopStop::kStoreError;
    if (gate && events_.on_gate) events_.on_gate(detail);
    if (error && events_.on_error) events_.on_error(detail);
    out_.stop = why;
    out_.detail = std::move(detail);
    return out_;
  }

  bool is_cut_off() const { return answer_.value("stopReason", "") == "length"; }
  void note(const std::string& s) const {
    if (events_.on_note) events_.on_note(s);
  }

  Provider& provider_;
  const CallTool& call_tool_;
  sessions::SessionStore& store_;
  const std::string& system_prompt_;
  const std::vector<tools::ToolSpec>& tools_;
  const LoopConfig& config_;
  const LoopEvents& events_;
  const std::stop_token cancel_;
  Inbox* const inbox_;
  const Clock::time_point started_ = Clock::now();
  const WallWatch wall_;  // after started_: it counts from it
  RepetitionTracker repetition_;
  Message answer_;  // this turn's
  LoopOutcome out_;
};

}  // namespace

sessions::MessageList context_messages(const sessions::SessionStore& store) {
  // The context as storage defines it: a compaction's summary and retained tail stand in
  // for what it summarised; branch summaries are included (sessions/context.h).
  return sessions::build_context(store).for_provider();
}

void Inbox::steer(std::string text) {
  std::lock_guard<std::mutex> lock(mu_);
  steering_.push_back(std::move(text));
}

void Inbox::follow_up(std::string text) {
  std::lock_guard<std::mutex> lock(mu_);
  follow_ups_.push_back(std::move(text));
}

std::vector<std::string> Inbox::take_steering() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> out(std::make_move_iterator(steering_.begin()),
                               std::make_move_iterator(steering_.end()));
  steering_.clear();
  return out;
}

std::optional<std::string> Inbox::take_follow_up() {
  std::lock_guard<std::mutex> lock(mu_);
  if (follow_ups_.empty()) return std::nullopt;
  std::string text = std::move(follow_ups_.front());
  follow_ups_.pop_front();
  return text;
}

LoopOutcome run_loop(Provider& provider, const CallTool& call_tool, sessions::SessionStore& store,
                     const std::string& system_prompt, const std::vector<tools::ToolSpec>& tools,
                     const LoopConfig& config, const LoopEvents& events,
                     std::stop_token cancel, Inbox* inbox) {
  Run run(provider, call_tool, store, system_prompt, tools, config, events, cancel, inbox);
  return run.until_stopped();
}

}  // namespace moat::agent
