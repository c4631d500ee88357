// tests/support/mock_model_server.cc: the mock model server (cpp-httplib on 127.0.0.1).
#include "tests/support/mock_model_server.h"

#include <httplib.h>

#include <algorithm>

namespace moat::testing {

using nlohmann::json;
using Api = agent::providers::Api;

namespace {

// Pieces of at most `size` bytes that never split a UTF-8 sequence (a piece must be valid
// JSON string content on its own).
std::vector<std::string> pieces(const std::string& s, size_t size) {
  std::vector<std::string> out;
  for (size_t i = 0; i < s.size();) {
    size_t end = std::min(s.size(), i + std::max<size_t>(size, 1));
    while (end < s.size() && (static_cast<unsigned char>(s[end]) & 0xC0) == 0x80) ++end;
    out.push_back(s.substr(i, end - i));
    i = end;
  }
  return out;
}

std::string sse(const json& data, const std::string& event = "") {
  std::string out;
  if (!event.empty()) out += "event: " + event + "\n";
  return out + "data: " + data.dump() + "\n\n";
}

void strip_cache_control(json& j) {
  if (j.is_object()) {
    j.erase("cache_control");
    for (auto& [k, v] : j.items()) strip_cache_control(v);
  } else if (j.is_array()) {
    for (auto& v : j) strip_cache_control(v);
  }
}

}  // namespace

std::string canonical_prompt(Api api, json body) {
  strip_cache_control(body);
  std::string out;
  auto add_each = [&](const char* key) {
    if (body.contains(key) && body[key].is_array())
      for (const auto& e : body[key]) out += e.dump() + "\n";
    else if (body.contains(key)) out += body[key].dump() + "\n";
  };
  add_each("tools");
  if (api == Api::kAnthropic) add_each("system");
  if (api == Api::kOpenAiResponses) add_each("instructions");
  add_each(api == Api::kOpenAiResponses ? "input" : "messages");
  return out;
}

namespace {

bool has_cache_control(const json& j) {
  if (j.is_object()) {
    if (j.contains("cache_control")) return true;
    for (const auto& [k, v] : j.items())
      if (has_cache_control(v)) return true;
  } else if (j.is_array()) {
    for (const auto& v : j)
      if (has_cache_control(v)) return true;
  }
  return false;
}

int64_t output_tokens(const ScriptedTurn& t) {
  size_t bytes = t.text.size() + t.reasoning.size();
  for (const auto& c : t.calls) bytes += c.name.size() + c.arguments.dump().size();
  return static_cast<int64_t>(bytes / 4 + 1);
}

struct Usage {
  int64_t prompt, cached, output;
  bool cache_write;  // Anthropic: the request carried breakpoints, the new part is written
};

// ---- OpenAI Chat Completions ----
std::vector<std::string> openai_events(const ScriptedTurn& t, const Usage& u, size_t frag,
                                       bool missing_finish) {
  auto chunk = [](json delta, json finish) {
    return sse(
        {{"id", "chatcmpl-mock"},
         {"object", "chat.completion.chunk"},
         {"created", 0},
         {"model", "mock"},
         {"choices", json::array({{{"index", 0}, {"delta", delta}, {"finish_reason", finish}}})}});
  };
  std::vector<std::string> ev{chunk({{"role", "assistant"}, {"content", ""}}, nullptr)};
  for (const auto& p : pieces(t.reasoning, 5))
    ev.push_back(chunk({{"reasoning_content", p}}, nullptr));
  for (const auto& p : pieces(t.text, 4)) ev.push_back(chunk({{"content", p}}, nullptr));
  for (size_t i = 0; i < t.calls.size(); ++i) {
    const auto& c = t.calls[i];
    ev.push_back(chunk(
        {{"tool_calls", json::array({{{"index", i},
                                      {"id", c.id},
                                      {"type", "function"},
                                      {"function", {{"name", c.name}, {"arguments", ""}}}}})}},
        nullptr));
    for (const auto& p : pieces(c.arguments.dump(), frag))
      ev.push_back(
          chunk({{"tool_calls", json::array({{{"index", i}, {"function", {{"arguments", p}}}}})}},
                nullptr));
  }
  const char* finish = t.hit_output_limit ? "length" : t.calls.empty() ? "stop" : "tool_calls";
  ev.push_back(chunk(json::object(), missing_finish ? json(nullptr) : json(finish)));
  ev.push_back(sse({{"id", "chatcmpl-mock"},
                    {"object", "chat.completion.chunk"},
                    {"choices", json::array()},
                    {"usage",
                     {{"prompt_tokens", u.prompt},
                      {"completion_tokens", u.output},
                      {"total_tokens", u.prompt + u.output},
                      {"prompt_tokens_details", {{"cached_tokens", u.cached}}},
                      {"completion_tokens_details", {{"reasoning_tokens", 0}}}}}}));
  ev.push_back("data: [DONE]\n\n");
  return ev;
}

// ---- Anthropic Messages ----
std::vector<std::string> anthropic_events(const ScriptedTurn& t, const Usage& u, size_t frag,
                                          bool missing_finish) {
  const int64_t write = u.cache_write ? u.prompt - u.cached : 0;
  std::vector<std::string> ev;
  auto add = [&](const json& j) { ev.push_back(sse(j, j["type"])); };
  add({{"type", "message_start"},
       {"message",
        {{"id", "msg_mock"},
         {"type", "message"},
         {"role", "assistant"},
         {"model", "mock"},
         {"content", json::array()},
         {"stop_reason", nullptr},
         {"stop_sequence", nullptr},
         {"usage",
          {{"input_tokens", u.prompt - u.cached - write},
           {"cache_creation_input_tokens", write},
           {"cache_read_input_tokens", u.cached},
           {"output_tokens", 1},
           {"cache_creation",
            {{"ephemeral_5m_input_tokens", write}, {"ephemeral_1h_input_tokens", 0}}}}}}}});
  int index = 0;
  auto block = [&](json start, const std::vector<json>& deltas) {
    add({{"type", "content_block_start"}, {"index", index}, {"content_block", start}});
    for (const auto& d : deltas)
      add({{"type", "content_block_delta"}, {"index", index}, {"delta", d}});
    add({{"type", "content_block_stop"}, {"index", index}});
    ++index;
  };
  if (!t.reasoning.empty()) {
    std::vector<json> d;
    for (const auto& p : pieces(t.reasoning, 5))
      d.push_back({{"type", "thinking_delta"}, {"thinking", p}});
    d.push_back({{"type", "signature_delta"}, {"signature", "c2lnLW1vY2s="}});
    block({{"type", "thinking"}, {"thinking", ""}}, d);
  }
  if (!t.text.empty()) {
    std::vector<json> d;
    for (const auto& p : pieces(t.text, 4)) d.push_back({{"type", "text_delta"}, {"text", p}});
    block({{"type", "text"}, {"text", ""}}, d);
  }
  ev.push_back("event: ping\ndata: {\"type\": \"ping\"}\n\n");
  for (const auto& c : t.calls) {
    std::vector<json> d{{{"type", "input_json_delta"}, {"partial_json", ""}}};
    for (const auto& p : pieces(c.arguments.dump(), frag))
      d.push_back({{"type", "input_json_delta"}, {"partial_json", p}});
    block({{"type", "tool_use"}, {"id", c.id}, {"name", c.name}, {"input", json::object()}}, d);
  }
  if (missing_finish) return ev;
  const char* stop = t.hit_output_limit ? "max_tokens" : t.calls.empty() ? "end_turn" : "tool_use";
  add({{"type", "message_delta"},
       {"delta", {{"stop_reason", stop}, {"stop_sequence", nullptr}}},
       {"usage", {{"output_tokens", u.output}}}});
  add({{"type", "message_stop"}});
  return ev;
}

// ---- OpenAI Responses ----
std::vector<std::string> responses_events(const ScriptedTurn& t, const Usage& u, size_t frag,
                                          bool missing_finish) {
  std::vector<std::string> ev;
  int seq = 0;
  auto add = [&](json j) {
    j["sequence_number"] = seq++;
    ev.push_back(sse(j, j["type"]));
  };
  add({{"type", "response.created"},
       {"response",
        {{"id", "resp_mock"},
         {"status", "in_progress"},
         {"model", "mock"},
         {"output", json::array()},
         {"usage", nullptr}}}});
  int oi = 0;
  json output = json::array();
  if (!t.reasoning.empty()) {
    json item = {{"type", "reasoning"}, {"id", "rs_mock"}, {"summary", json::array()}};
    add({{"type", "response.output_item.added"}, {"output_index", oi}, {"item", item}});
    for (const auto& p : pieces(t.reasoning, 5))
      add({{"type", "response.reasoning_summary_text.delta"},
           {"item_id", "rs_mock"},
           {"output_index", oi},
           {"summary_index", 0},
           {"delta", p}});
    add({{"type", "response.output_item.done"}, {"output_index", oi}, {"item", item}});
    output.push_back(item);
    ++oi;
  }
  if (!t.text.empty()) {
    json item = {{"type", "message"},
                 {"id", "msg_mock"},
                 {"role", "assistant"},
                 {"status", "in_progress"},
                 {"content", json::array()}};
    add({{"type", "response.output_item.added"}, {"output_index", oi}, {"item", item}});
    for (const auto& p : pieces(t.text, 4))
      add({{"type", "response.output_text.delta"},
           {"item_id", "msg_mock"},
           {"output_index", oi},
           {"content_index", 0},
           {"delta", p}});
    item["status"] = "completed";
    item["content"] = json::array({{{"type", "output_text"}, {"text", t.text}}});
    add({{"type", "response.output_item.done"}, {"output_index", oi}, {"item", item}});
    output.push_back(item);
    ++oi;
  }
  for (const auto& c : t.calls) {
    const std::string item_id = "fc_" + c.id;
    json item = {{"type", "function_call"}, {"id", item_id},   {"call_id", c.id},
                 {"name", c.name},          {"arguments", ""}, {"status", "in_progress"}};
    add({{"type", "response.output_item.added"}, {"output_index", oi}, {"item", item}});
    for (const auto& p : pieces(c.arguments.dump(), frag))
      add({{"type", "response.function_call_arguments.delta"},
           {"item_id", item_id},
           {"output_index", oi},
           {"delta", p}});
    add({{"type", "response.function_call_arguments.done"},
         {"item_id", item_id},
         {"output_index", oi},
         {"arguments", c.arguments.dump()}});
    item["arguments"] = c.arguments.dump();
    item["status"] = "completed";
    add({{"type", "response.output_item.done"}, {"output_index", oi}, {"item", item}});
    output.push_back(item);
    ++oi;
  }
  if (missing_finish) return ev;
  json response = {{"id", "resp_mock"},
                   {"model", "mock"},
                   {"output", output},
                   {"status", t.hit_output_limit ? "incomplete" : "completed"},
                   {"incomplete_details",
                    t.hit_output_limit ? json({{"reason", "max_output_tokens"}}) : json(nullptr)},
                   {"error", nullptr},
                   {"usage",
                    {{"input_tokens", u.prompt},
                     {"input_tokens_details", {{"cached_tokens", u.cached}}},
                     {"output_tokens", u.output},
                     {"output_tokens_details", {{"reasoning_tokens", 0}}},
                     {"total_tokens", u.prompt + u.output}}}};
  add({{"type", t.hit_output_limit ? "response.incomplete" : "response.completed"},
       {"response", response}});
  return ev;
}

std::string midstream_error(Api api) {
  switch (api) {
    case Api::kAnthropic:
      return sse(
          {{"type", "error"}, {"error", {{"type", "overloaded_error"}, {"message", "Overloaded"}}}},
          "error");
    case Api::kOpenAiChat:
      return sse({{"error", {{"message", "The server is overloaded"}, {"type", "server_error"}}}});
    case Api::kOpenAiResponses:
      return sse({{"type", "error"},
                  {"code", "server_error"},
                  {"message", "The server is overloaded"},
                  {"param", nullptr}},
                 "error");
  }
  return "";
}

std::string error_body(Api api, const std::string& type, const std::string& message) {
  if (api == Api::kAnthropic)
    return json({{"type", "error"}, {"error", {{"type", type}, {"message", message}}}}).dump();
  return json({{"error",
                {{"message", message}, {"type", type}, {"code", type}, {"param", nullptr}}}})
      .dump();
}

}  // namespace

// What one 200 answer streams, and how.
struct MockModelServer::Plan {
  std::vector<std::string> events;
  std::optional<Fault> fault;
  std::string injected;                 // the malformed event or the in-stream error
  std::function<void()> on_last_event;  // marks the scripted turn as used
  std::chrono::milliseconds stall{0};
  std::atomic<bool>* stopping = nullptr;
  std::function<void()> on_answered;  // after the last byte: records the timing
};

MockModelServer::MockModelServer(Api api, bool tcp_nodelay)
    : api_(api), server_(std::make_unique<httplib::Server>()) {
  auto route = [this](const httplib::Request& req, httplib::Response& res) {
    std::map<std::string, std::string> headers;
    for (const auto& [k, v] : req.headers) {
      std::string name = k;
      std::transform(name.begin(), name.end(), name.begin(), ::tolower);
      headers[name] = v;
    }
    int status = 200;
    std::string content_type, body;
    std::map<std::string, std::string> reply_headers;
    std::shared_ptr<Plan> plan;
    handle(req.path, req.body, headers, req.remote_port, status, content_type, body, reply_headers,
           plan);
    res.status = status;
    for (const auto& [k, v] : reply_headers) res.set_header(k, v);
    if (!plan) {
      res.set_content(body, content_type);
      return;
    }
    res.set_chunked_content_provider("text/event-stream", [plan](size_t, httplib::DataSink& sink) {
      const size_t n = plan->events.size();
      const size_t cut = n / 2;
      for (size_t i = 0; i < n; ++i) {
        if (plan->fault && i == cut) {
          const Fault f = *plan->fault;
          if (f == Fault::kDropMidStream) return false;  // closes without the last chunk
          if (f == Fault::kOverloadedMidStream) {
            sink.write(plan->injected.data(), plan->injected.size());
            sink.done();
            return true;
          }
          if (f == Fault::kMalformedChunk) sink.write(plan->injected.data(), plan->injected.size());
          if (f == Fault::kStall) {
            const auto until = std::chrono::steady_clock::now() + plan->stall;
            while (std::chrono::steady_clock::now() < until && !plan->stopping->load())
              std::this_thread::sleep_for(std::chrono::milliseconds(10));
          }
        }
        if (i + 1 == n && plan->on_last_event) plan->on_last_event();
        if (!sink.write(plan->events[i].data(), plan->events[i].size())) return false;
      }
      sink.done();
      plan->on_answered();
      return true;
    });
  };
  for (const char* path : {"/v1/chat/completions", "/v1/messages", "/v1/responses"})
    server_->Post(path, route);
  // Small SSE writes must not wait for delayed ACKs (Nagle): real servers flush each event.
  server_->set_tcp_nodelay(tcp_nodelay);
  port_ = server_->bind_to_any_port("127.0.0.1");
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  while (!server_->is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

MockModelServer::~MockModelServer() {
  stopping_ = true;
  server_->stop();
  thread_.join();
}

std::string MockModelServer::base_url() const {
  return "http://127.0.0.1:" + std::to_string(port_) + "/v1";
}

std::string MockModelServer::provider_toml(const std::string& name) const {
  return "[providers." + name + "]\nkind = \"" + std::string(agent::providers::api_name(api_)) +
         "\"\nbase_url = \"" + base_url() + "\"\nlocal = true\n";
}

void MockModelServer::push_turn(ScriptedTurn turn) {
  std::lock_guard<std::mutex> lock(mu_);
  turns_.push_back(std::move(turn));
}

void MockModelServer::set_responder(std::function<ScriptedTurn(const json&, size_t)> f) {
  std::lock_guard<std::mutex> lock(mu_);
  responder_ = std::move(f);
}

void MockModelServer::inject(Fault fault, int times) {
  std::lock_guard<std::mutex> lock(mu_);
  for (int i = 0; i < times; ++i) faults_.push_back(fault);
}

std::vector<RecordedRequest> MockModelServer::requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_;
}

std::vector<ServedUsage> MockModelServer::served_usage() const {
  std::lock_guard<std::mutex> lock(mu_);
  return usage_;
}

std::vector<RequestTiming> MockModelServer::timings() const {
  std::lock_guard<std::mutex> lock(mu_);
  return timings_;
}

size_t MockModelServer::request_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_.size();
}

void MockModelServer::handle(const std::string& path, const std::string& body,
                             const std::map<std::string, std::string>& headers, int client_port,
                             int& status, std::string& content_type, std::string& error_out,
                             std::map<std::string, std::string>& reply_headers,
                             std::shared_ptr<Plan>& plan) {
  std::lock_guard<std::mutex> lock(mu_);
  requests_.push_back({path, body, headers, client_port});
  timings_.push_back({std::chrono::steady_clock::now(), std::nullopt});
  content_type = "application/json";
  std::optional<Fault> fault;
  if (!faults_.empty()) {
    fault = faults_.front();
    faults_.pop_front();
  }
  auto reply = [&](int code, const std::string& type, const std::string& message) {
    status = code;
    error_out = error_body(api_, type, message);
  };
  if (fault == Fault::kRateLimit) {
    reply(429, api_ == Api::kAnthropic ? "rate_limit_error" : "rate_limit_exceeded",
          "Rate limit reached");
    // OpenAI sends both; retry-after-ms is the precise one.
    reply_headers["retry-after-ms"] = std::to_string(retry_after_.count());
    reply_headers["retry-after"] = std::to_string((retry_after_.count() + 999) / 1000);
    return;
  }
  if (fault == Fault::kInsufficientQuota)
    return reply(429, "insufficient_quota", "You exceeded your current quota");
  if (fault == Fault::kServerError)
    return reply(500, api_ == Api::kAnthropic ? "api_error" : "server_error", "Internal error");
  if (fault == Fault::kOverloaded) return reply(529, "overloaded_error", "Overloaded");
  if (fault == Fault::kBadRequest)
    return reply(400, "invalid_request_error", "messages: field required");
  if (fault == Fault::kUnauthorized) {
    // Real providers echo part of a bad key; this one echoes all of it.
    std::string key = headers.count("x-api-key") ? headers.at("x-api-key") : "";
    if (auto it = headers.find("authorization"); it != headers.end() && it->second.size() > 7)
      key = it->second.substr(7);
    return reply(401, api_ == Api::kAnthropic ? "authentication_error" : "invalid_api_key",
                 "Incorrect API key provided: " + key);
  }
  auto parsed = json::parse(body, nullptr, false);
  if (parsed.is_discarded()) return reply(400, "invalid_request_error", "body is not JSON");
  std::optional<ScriptedTurn> turn;
  if (!turns_.empty()) turn = turns_.front();
  else if (responder_) turn = responder_(parsed, answered_);
  if (!turn) return reply(500, "server_error", "mock: no scripted turn left");

  const std::string prompt = canonical_prompt(api_, parsed);
  size_t common = 0;
  while (common < prompt.size() && common < previous_prompt_.size() &&
         prompt[common] == previous_prompt_[common])
    ++common;
  const Usage u{static_cast<int64_t>(prompt.size() / 4), static_cast<int64_t>(common / 4),
                output_tokens(*turn), has_cache_control(parsed)};
  const bool missing = fault == Fault::kMissingFinish;
  plan = std::make_shared<Plan>();
  switch (api_) {
    case Api::kOpenAiChat: plan->events = openai_events(*turn, u, fragment_, missing); break;
    case Api::kAnthropic: plan->events = anthropic_events(*turn, u, fragment_, missing); break;
    case Api::kOpenAiResponses:
      plan->events = responses_events(*turn, u, fragment_, missing);
      break;
  }
  plan->fault = fault;
  plan->injected = fault == Fault::kMalformedChunk ? "data: {\"choices\": [{\"delta\": \n\n"
                                                   : midstream_error(api_);
  plan->stall = stall_;
  plan->stopping = &stopping_;
  plan->on_answered = [this, i = timings_.size() - 1] {
    std::lock_guard<std::mutex> lock(mu_);
    timings_[i].answered = std::chrono::steady_clock::now();
  };
  const bool counts = !fault || fault == Fault::kStall;
  if (counts) {
    plan->on_last_event = [this, prompt, u, from_script = !turns_.empty()] {
      std::lock_guard<std::mutex> lock(mu_);
      if (from_script && !turns_.empty()) turns_.pop_front();
      ++answered_;
      previous_prompt_ = prompt;
      usage_.push_back({u.prompt, u.cached, u.output});
    };
  }
}

}  // namespace moat::testing
