// agent/providers/openai_chat_decoder.cc: OpenAI Chat Completions chunks, and the deviations
// of compatible servers (Azure, Ollama, vLLM, llama.cpp, OpenRouter, Groq, Mistral).
#include <map>
#include <vector>

#include "agent/providers/decoder_base.h"

namespace moat::agent::providers {
namespace {

struct ToolCallAcc {
  json index;  // as sent: Mistral sends none, so the normalised parse reports null
  std::string id;
  std::string name;
  std::string arguments;
};

class OpenAiChatDecoder final : public DecoderBase {
 public:
  explicit OpenAiChatDecoder(DecoderContext ctx) : DecoderBase(std::move(ctx)) {}

  void on_event(const SseEvent& ev) override {
    // Events after a failure still feed the normalised parse (OpenRouter sends [DONE] after
    // its error chunk); the failure recorded first is the one reported.
    ++data_events_;
    if (ev.type == "error") {  // Groq: `event: error` with {"error":{...}}, status 200
      auto j = parse_json(ev.data);
      error_ = j ? (field(*j, "error") ? (*j)["error"] : *j) : json(ev.data);
      fail_from_error();
      return;
    }
    if (ev.data == "[DONE]") {
      saw_done_ = true;
      return;
    }
    if (auto j = data_object(ev, "chunk is not a JSON object")) on_chunk(*j);
  }

  void end_of_stream() override {
    if (failure_) return;
    // The finish reason is the terminal signal: [DONE] alone does not say the answer is
    // whole (a proxy may append it), and some servers close without [DONE] after it.
    if (!finish_reason_)
      failure_ = StreamFailure{502, "incomplete_stream",
                               saw_done_ ? "stream ended without a finish reason"
                                         : "stream ended before its finish reason"};
  }

  json normalized(size_t comment_lines) const override {
    json calls = json::array();
    for (const auto& c : calls_) {
      json parsed = parse_arguments(c.arguments);
      calls.push_back({{"index", c.index},
                       {"id", c.id},
                       {"name", c.name},
                       {"arguments", c.arguments},
                       {"arguments_json", parsed},
                       {"complete", !parsed.is_null()}});
    }
    return {{"text", text_},
            {"reasoning", has_reasoning_ ? json(reasoning_) : json(nullptr)},
            {"tool_calls", calls},
            {"finish_reason", finish_reason_ ? json(*finish_reason_) : json(nullptr)},
            {"usage", normalized_usage()},
            {"error", error_},
            {"saw_done", saw_done_},
            {"sse_comment_lines", comment_lines},
            {"data_events", data_events_}};
  }

  Message message() const override {
    json content = json::array();
    if (has_reasoning_ && !reasoning_.empty())
      content.push_back({{"type", "thinking"}, {"thinking", reasoning_}});
    if (!text_.empty()) content.push_back({{"type", "text"}, {"text", text_}});
    for (const auto& c : calls_) content.push_back(tool_call_block(c.id, c.name, c.arguments));
    return answer(content, stop_reason(), message_usage());
  }

 private:
  void on_chunk(const json& chunk) {
    if (auto m = string_field(chunk, "model"); m && !m->empty()) model_ = *m;
    // OpenRouter puts an error object inside an ordinary chunk; openai-python treats any
    // chunk with "error" as a failed stream, and so do we.
    if (const json* err = field(chunk, "error")) {
      error_ = *err;
    }
    if (const json* usage = field(chunk, "usage"); usage && usage->is_object()) usage_ = *usage;
    if (const json* choices = field(chunk, "choices"); choices && choices->is_array()) {
      for (const auto& choice : *choices) {
        // Only choice 0 is ours (we never ask for n > 1); Mistral omits the index.
        if (int_field(choice, "index").value_or(0) != 0) continue;
        on_choice(choice);
      }
    }
    if (!error_.is_null()) fail_from_error();
  }

  void on_choice(const json& choice) {
    if (const json* delta = field(choice, "delta")) {
      if (auto t = string_field(*delta, "content")) append_piece(text_, *t, false);
      // reasoning_content: llama.cpp, vLLM, DeepSeek; reasoning: OpenRouter, Groq, Ollama.
      for (const char* key : {"reasoning_content", "reasoning"})
        if (auto r = string_field(*delta, key)) append_reasoning(*r);
      if (const json* tcs = field(*delta, "tool_calls"); tcs && tcs->is_array())
        for (const auto& tc : *tcs) on_tool_call_delta(tc);
    }
    if (auto fr = string_field(choice, "finish_reason")) finish_reason_ = *fr;
  }

  void on_tool_call_delta(const json& tc) {
    ToolCallAcc* acc = find_call(tc);
    if (auto id = string_field(tc, "id"); id && !id->empty() && acc->id.empty()) acc->id = *id;
    if (const json* fn = field(tc, "function")) {
      // Continuation fragments of vLLM-style servers carry "name":"": never let them
      // overwrite the name the first fragment gave.
      if (auto name = string_field(*fn, "name"); name && !name->empty() && acc->name.empty())
        acc->name = *name;
      if (auto args = string_field(*fn, "arguments")) acc->arguments += *args;
    }
  }

  // Calls are keyed by index; without one (Mistral), by id, and a fragment with neither
  // continues the latest call.
  ToolCallAcc* find_call(const json& tc) {
    const json* index = field(tc, "index");
    auto id = string_field(tc, "id");
    for (auto& c : calls_) {
      if (index && c.index == *index) return &c;
      if (!index && id && !id->empty() && c.id == *id) return &c;
    }
    if (!index && (!id || id->empty()) && !calls_.empty()) return &calls_.back();
    calls_.push_back(ToolCallAcc{index ? *index : json(nullptr), "", "", ""});
    return &calls_.back();
  }

  void append_reasoning(const std::string& r) {
    has_reasoning_ = true;
    append_piece(reasoning_, r, true);
  }

  void fail_from_error() {
    if (failure_) return;
    StreamFailure f;
    f.message = string_field(error_, "message")
                    .value_or(error_.is_string() ? error_.get<std::string>() : error_.dump());
    f.kind = string_field(error_, "type").value_or("");
    if (auto code = string_field(error_, "code")) f.kind = *code;
    f.status = static_cast<int>(
        int_field(error_, "status_code").value_or(int_field(error_, "code").value_or(500)));
    failure_ = f;
  }

  static json parse_arguments(const std::string& raw) {
    if (raw.empty()) return json::object();
    auto j = parse_json(raw);
    return j ? *j : json(nullptr);
  }

  json normalized_usage() const {
    return usage_.is_null() ? json(nullptr) : normalized_openai_usage(usage_, kChatUsageNames);
  }
  json message_usage() const { return openai_message_usage(usage_, kChatUsageNames); }

  std::string stop_reason() const {
    if (failure_) return "error";
    const std::string fr = finish_reason_.value_or("");
    if (fr == "length") return "length";
    if (fr == "tool_calls" || fr == "function_call" || (!calls_.empty() && fr == "stop"))
      return calls_.empty() ? "stop" : "toolUse";
    if (fr == "content_filter") return "error";
    return "stop";
  }

  std::string text_, reasoning_;
  bool has_reasoning_ = false;
  std::vector<ToolCallAcc> calls_;
  std::optional<std::string> finish_reason_;
  json usage_ = nullptr;
  bool saw_done_ = false;
};

}  // namespace

std::unique_ptr<StreamDecoder> make_openai_chat_decoder(DecoderContext context) {
  return std::make_unique<OpenAiChatDecoder>(std::move(context));
}

}  // namespace moat::agent::providers
