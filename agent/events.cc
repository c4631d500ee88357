// agent/events.cc: the run's events (events.h) and their JSON rendering.
#include "agent/events.h"

#include <utility>

#include "agent/model_open.h"
#include "tools/registry.h"

namespace moat::agent {
namespace {

using nlohmann::json;

class JsonEventSink final : public EventSink {
 public:
  explicit JsonEventSink(FILE* out) : out_(out) {}
  void emit(const json& event) override {
    const std::string line = json_line(event) + "\n";
    std::lock_guard<std::mutex> lock(mu_);
    std::fwrite(line.data(), 1, line.size(), out_);
    std::fflush(out_);
  }

 private:
  FILE* out_;
  std::mutex mu_;  // one line at a time
};

std::string text_of(const json& content) {
  std::string text;
  if (content.is_array())
    for (const auto& b : content)
      if (b.is_object() && b.value("type", "") == "text") text += b.value("text", "");
  return text;
}

int tool_calls_in(const Message& m) {
  int n = 0;
  if (m.contains("content") && m["content"].is_array())
    for (const auto& b : m["content"])
      if (b.is_object() && b.value("type", "") == "toolCall") ++n;
  return n;
}

// What moatd reported about the call beyond its text (its "moat" details): the decision, the
// rule, who decided, the exit code, the files it changed, an edit's diff. Absent keys stay
// absent.
json call_facts(const tools::ToolResult& r) {
  json facts = json::object();
  if (!r.details.is_object()) return facts;
  for (const char* key : {"decision", "rule", "decided_by", "exit_code", "signal", "files_changed",
                          "timedOut", "fullOutputPath", "diff"})
    if (r.details.contains(key)) facts[key] = r.details[key];
  return facts;
}

}  // namespace

std::string json_line(const json& value) {
  auto dump = [](const json& v) {
    return v.dump(-1, ' ', /*ensure_ascii=*/true, json::error_handler_t::replace);
  };
  if (!value.is_object() || !value.contains("type")) return dump(value);
  // "type" first, so a reader (a person or grep) sees what an event is at its start.
  json rest = value;
  rest.erase("type");
  const std::string body = dump(rest);
  return "{\"type\":" + dump(value["type"]) + (body == "{}" ? "}" : "," + body.substr(1));
}

std::unique_ptr<EventSink> json_event_sink(FILE* out) {
  return std::make_unique<JsonEventSink>(out);
}

const char* stop_event_name(LoopStop stop) {
  switch (stop) {
    case LoopStop::kDone: return "done";
    case LoopStop::kGate: return "gate";
    case LoopStop::kRepetition: return "repetition";
    case LoopStop::kProviderError: return "provider_error";
    case LoopStop::kStoreError: return "store_error";
    case LoopStop::kCancelled: return "cancelled";
    case LoopStop::kTerminated: return "terminated";
  }
  return "?";
}

RunEvents::RunEvents(EventSink& sink, const std::string& model_spec)
    : sink_(sink), model_spec_(model_spec) {
  if (auto m = configured_model(model_spec)) pricing_ = m->pricing;  // else: costs 0
}

void RunEvents::set_model(const std::string& model_spec, const providers::Pricing& pricing) {
  std::lock_guard<std::mutex> lock(mu_);
  model_spec_ = model_spec;
  pricing_ = pricing;
}

json RunEvents::totals() {
  std::lock_guard<std::mutex> lock(mu_);
  return totals_.to_json();
}

void RunEvents::session(json fields) {
  fields["type"] = "session";
  fields["schema"] = kEventSchema;
  {
    std::lock_guard<std::mutex> lock(mu_);
    host_files_.set_workspace(fields.value("workspace", ""));
  }
  sink_.emit(fields);
}

// Cost and the cache-miss audit of an answer, with the model's prices: written into the
// answer (so into the session), and reported.
void RunEvents::answered(Message& answer) {
  const auto usage = providers::Usage::from_message(answer);
  const auto cost = providers::cost_of(usage, pricing_);
  answer["cost"] = cost.to_json();
  const auto now = std::chrono::system_clock::now();
  // A replayed answer's usage is what the file says, not a cache's: nothing to audit.
  const bool replayed = model_spec_.rfind("replay:", 0) == 0;
  const auto miss = replayed ? std::nullopt
                             : providers::audit_cache(previous_, model_spec_, usage, pricing_, now);
  if (miss) answer["cacheMiss"] = miss->to_json();
  previous_ = providers::CacheState{model_spec_, usage.prompt(), now};
  const int calls = tool_calls_in(answer);
  json event = {{"type", "answer"},
                {"turn", turn_},
                {"text", text_of(answer.value("content", json::array()))},
                {"tool_calls", calls},
                {"stop_reason", answer.value("stopReason", "")},
                {"usage", usage.to_json()},
                {"cost", cost.to_json()}};
  {
    std::lock_guard<std::mutex> lock(mu_);
    totals_.add(usage, cost);
    event["totals"] = totals_.to_json();
    if (calls == 0) final_answer_ = event["text"].get<std::string>();
  }
  sink_.emit(event);
  if (miss)
    sink_.emit({{"type", "cache_miss"},
                {"turn", turn_},
                {"missed_tokens", miss->missed_tokens},
                {"reason", miss->reason},
                {"cost", miss->cost}});
}

LoopEvents RunEvents::loop_events() {
  LoopEvents ev;
  ev.on_turn_start = [this](int turn) {
    turn_ = turn;
    sink_.emit({{"type", "turn_start"}, {"turn", turn}});
  };
  ev.on_text = [this](std::string_view t) {
    if (!t.empty()) sink_.emit({{"type", "text_delta"}, {"text", t}});
  };
  ev.on_answer = [this](Message& answer) { answered(answer); };
  ev.on_call = [this](const std::string& id, const std::string& tool, const json& args) {
    sink_.emit({{"type", "tool_call_start"},
                {"id", id},
                {"tool", tool},
                {"arguments", args},
                {"summary", tools::call_summary(tool, args)}});
  };
  ev.on_result = [this](const std::string& id, const std::string& tool, const tools::ToolResult& r,
                        std::chrono::milliseconds took) {
    json event = {{"type", "tool_call_end"},
                  {"id", id},
                  {"tool", tool},
                  {"is_error", r.is_error},
                  {"duration_ms", took.count()},
                  {"output", text_of(r.content)}};
    event.update(call_facts(r));
    if (r.details.is_object() && r.details.contains("files_changed")) {
      std::lock_guard<std::mutex> lock(mu_);
      host_files_.add(r.details["files_changed"], r.details.value("files_changed_truncated", false));
    }
    sink_.emit(event);
  };
  ev.on_turn_end = [this](int turn) { sink_.emit({{"type", "turn_end"}, {"turn", turn}}); };
  ev.on_note = [this](const std::string& n) { sink_.emit({{"type", "note"}, {"message", n}}); };
  ev.on_gate = [this](const std::string& r) { sink_.emit({{"type", "gate"}, {"reason", r}}); };
  ev.on_error = [this](const std::string& m) {
    sink_.emit({{"type", "error"}, {"during", "run"}, {"message", m}});
  };
  // The reason names the provider's status and message, never the key (http_provider.h).
  ev.on_retry = [this](int attempt, std::chrono::milliseconds delay, std::string_view reason) {
    sink_.emit(
        {{"type", "retry"}, {"attempt", attempt}, {"delay_ms", delay.count()}, {"reason", reason}});
  };
  return ev;
}

void RunEvents::decided(const std::string& call_id, const json& decided) {
  json event = {{"type", "tool_call_decision"}, {"id", call_id}};
  for (const char* key : {"decision", "rule", "decided_by"})
    if (decided.contains(key)) event[key] = decided[key];
  sink_.emit(event);
}

void RunEvents::output(const std::string& call_id, std::string_view chunk) {
  if (!chunk.empty()) sink_.emit({{"type", "tool_output"}, {"id", call_id}, {"chunk", chunk}});
}

void RunEvents::result(const LoopOutcome& outcome, int exit_code, json fields) {
  fields["type"] = "result";
  fields["stop"] = stop_event_name(outcome.stop);
  fields["detail"] = outcome.detail;
  fields["exit_code"] = exit_code;
  fields["turns"] = outcome.turns;
  fields["total_tokens"] = outcome.total_tokens;
  const bool answered = outcome.stop == LoopStop::kDone || outcome.stop == LoopStop::kTerminated;
  std::lock_guard<std::mutex> lock(mu_);
  fields["answer"] = answered && final_answer_ ? json(*final_answer_) : json(nullptr);
  fields["totals"] = totals_.to_json();
  // The session so far (with --rpc, every prompt's result names them until the session ends).
  fields["host_executed"] = host_files_.to_json();
  if (!host_files_.unknown().empty()) fields["host_executed_unknown"] = host_files_.unknown();
  final_answer_.reset();  // `--rpc`: the next prompt's run has its own
  sink_.emit(fields);
}

}  // namespace moat::agent
