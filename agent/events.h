// agent/events.h: what a run reports, as events (docs/events.md): the one emitter the loop's
// reporting goes through, rendered for a person (agent/text_events.h) or as JSON lines.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdio>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "agent/host_files.h"
#include "agent/loop.h"
#include "agent/providers/usage.h"

namespace moat::agent {

// The version of the event schema (docs/events.md), in the first event of every stream.
inline constexpr int kEventSchema = 1;

// Where events go. `event` is an object whose "type" names it (docs/events.md). Thread-safe:
// a call's output arrives on the client's reader thread, the rest on the loop's.
class EventSink {
 public:
  virtual ~EventSink() = default;
  virtual void emit(const nlohmann::json& event) = 0;
};

// One JSON object per line: every control character and every non-ASCII character escaped
// (\uXXXX), bytes that are not UTF-8 replaced by U+FFFD, so a line is plain printable ASCII
// and nothing in it can act on a terminal.
std::string json_line(const nlohmann::json& value);

// `--json`: json_line() of each event on `out`, flushed per event.
std::unique_ptr<EventSink> json_event_sink(FILE* out);

// The events of one `moat run`: the session header, the loop's callbacks (with each answer's
// cost, from the model's prices), the calls' output, and the result with the run's totals.
class RunEvents {
 public:
  RunEvents(EventSink& sink, const std::string& model_spec);
  // The first event: `fields` (id, workspace, model, layers, ...) with type and schema.
  void session(nlohmann::json fields);
  // The loop's callbacks; valid while this object lives.
  LoopEvents loop_events();
  // A chunk of a running call's output (MoatdClient::call's progress).
  void output(const std::string& call_id, std::string_view chunk);
  // A call's decision, reported by moatd before the call runs.
  void decided(const std::string& call_id, const nlohmann::json& decided);
  // The last event. `fields` (session file, audit log, ...) are added to the totals, and the
  // host-executed files the session created or changed so far (host_files.h).
  void result(const LoopOutcome& outcome, int exit_code, nlohmann::json fields);
  void emit(nlohmann::json event) { sink_.emit(event); }
  // The model of the answers from now on (`--rpc`'s set_model), with its prices.
  void set_model(const std::string& model_spec, const providers::Pricing& pricing);
  // The totals so far (usage, cost, answers), as in `result`.
  nlohmann::json totals();

 private:
  void answered(Message& answer);

  EventSink& sink_;
  std::string model_spec_;
  providers::Pricing pricing_;
  std::optional<providers::CacheState> previous_;
  std::mutex mu_;  // totals_, final_answer_ and host_files_
  providers::SessionTotals totals_;
  int turn_ = 0;
  std::optional<std::string> final_answer_;  // the text of the last answer without calls
  HostFiles host_files_;                       // what the calls' files_changed named
};

// The name of a stop in events ("done", "gate", ...).
const char* stop_event_name(LoopStop stop);

}  // namespace moat::agent
