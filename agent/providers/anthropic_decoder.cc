// agent/providers/anthropic_decoder.cc: Anthropic Messages stream events.
#include <map>

#include "agent/providers/decoder_base.h"

namespace moat::agent::providers {
namespace {

struct Block {
  std::string type;  // text | thinking | redacted_thinking | tool_use | newer, kept by name
  bool stopped = false;
  std::string text, thinking, signature;
  std::string data;  // redacted_thinking: the encrypted thinking, sent back as it came
  std::string id, name, partial_json;
  json start_input = nullptr;  // the input content_block_start carried, used if no deltas
  bool saw_input_delta = false;
};

// The usage fields of the normalised parse; null until the stream sends them.
constexpr const char* kUsageFields[] = {"input_tokens", "output_tokens",
                                        "cache_creation_input_tokens", "cache_read_input_tokens"};

class AnthropicDecoder final : public DecoderBase {
 public:
  explicit AnthropicDecoder(DecoderContext ctx) : DecoderBase(std::move(ctx)) {
    for (const char* f : kUsageFields) usage_[f] = nullptr;
    usage_["ephemeral_5m_input_tokens"] = nullptr;
    usage_["ephemeral_1h_input_tokens"] = nullptr;
  }

  void on_event(const SseEvent& ev) override {
    ++data_events_;
    auto j = data_object(ev, "event data is not a JSON object");
    if (!j) return;
    // The JSON "type" is authoritative; the `event:` line repeats it.
    const std::string type = string_field(*j, "type").value_or(ev.type);
    if (type == "message_start") {
      on_message_start(*j);
    } else if (type == "content_block_start") {
      on_block_start(*j);
    } else if (type == "content_block_delta") {
      on_block_delta(*j);
    } else if (type == "content_block_stop") {
      if (Block* b = block_at(*j)) b->stopped = true;
    } else if (type == "message_delta") {
      on_message_delta(*j);
    } else if (type == "message_stop") {
      saw_message_stop_ = true;
    } else if (type == "error") {
      on_error(*j);
    }
    // ping and unknown event types are ignored, as the API's versioning policy asks.
  }

  void end_of_stream() override {
    if (!saw_message_stop_)
      set_failure({502, "incomplete_stream", "stream ended before message_stop"});
  }

  json normalized(size_t /*comment_lines*/) const override {
    json blocks = json::array();
    std::string text;
    for (const auto& [index, b] : blocks_) {
      json nb = {{"index", index}, {"type", b.type}, {"stopped", b.stopped}};
      if (b.type == "text") {
        nb["text"] = b.text;
        text += b.text;
      } else if (b.type == "thinking") {
        nb["thinking"] = b.thinking;
        nb["signature"] = b.signature;
      } else if (b.type == "redacted_thinking") {
        nb["data"] = b.data;
      } else if (b.type == "tool_use") {
        json input = tool_input(b);
        nb.update({{"id", b.id},
                   {"name", b.name},
                   {"partial_json", b.partial_json},
                   {"input", input},
                   {"complete", b.stopped && !input.is_null()}});
      }
      blocks.push_back(nb);
    }
    return {{"message_id", message_id_},
            {"model", model_},
            {"text", text},
            {"blocks", blocks},
            {"stop_reason", stop_reason_},
            {"stop_sequence", stop_sequence_},
            {"usage", usage_},
            {"error", error_},
            {"saw_message_stop", saw_message_stop_},
            {"data_events", data_events_}};
  }

  Message message() const override {
    json content = json::array();
    for (const auto& [index, b] : blocks_) {
      if (b.type == "text" && !b.text.empty()) {
        content.push_back({{"type", "text"}, {"text", b.text}});
      } else if (b.type == "thinking") {
        content.push_back(
            {{"type", "thinking"}, {"thinking", b.thinking}, {"signature", b.signature}});
      } else if (b.type == "redacted_thinking") {
        // With extended thinking on, the assistant turn must go back with its thinking
        // blocks unchanged, the redacted ones included (docs.anthropic.com, extended thinking).
        content.push_back({{"type", "thinking"}, {"thinking", ""}, {"redacted", b.data}});
      } else if (b.type == "tool_use") {
        // A block the stream never closed is cut off even if its JSON happens to parse.
        content.push_back(tool_call_block(b.id, b.name, effective_json(b), b.stopped));
      }
    }
    auto u = [&](const char* k) { return usage_[k].is_number() ? usage_[k].get<int64_t>() : 0; };
    return answer(content, stop_reason(),
                  usage_json(u("input_tokens"), u("output_tokens"), u("cache_read_input_tokens"),
                             u("cache_creation_input_tokens"), u("ephemeral_1h_input_tokens")));
  }

 private:
  void on_message_start(const json& j) {
    const json* msg = field(j, "message");
    if (!msg) return;
    message_id_ = raw_field(*msg, "id");
    model_ = string_field(*msg, "model").value_or("");
    if (const json* u = field(*msg, "usage")) overlay_usage(*u);
  }

  void on_block_start(const json& j) {
    auto index = int_field(j, "index");
    const json* cb = field(j, "content_block");
    if (!index || !cb) return;
    Block& b = blocks_[*index];
    b.type = string_field(*cb, "type").value_or("");
    b.text = string_field(*cb, "text").value_or("");
    b.thinking = string_field(*cb, "thinking").value_or("");
    b.signature = string_field(*cb, "signature").value_or("");
    b.data = string_field(*cb, "data").value_or("");
    b.id = string_field(*cb, "id").value_or("");
    b.name = string_field(*cb, "name").value_or("");
    b.start_input = raw_field(*cb, "input");
  }

  void on_block_delta(const json& j) {
    Block* b = block_at(j);
    const json* d = field(j, "delta");
    if (!b || !d) return;
    const std::string dt = string_field(*d, "type").value_or("");
    if (dt == "text_delta") {
      append_piece(b->text, string_field(*d, "text").value_or(""), false);
    } else if (dt == "thinking_delta") {
      append_piece(b->thinking, string_field(*d, "thinking").value_or(""), true);
    } else if (dt == "signature_delta") {
      b->signature += string_field(*d, "signature").value_or("");
    } else if (dt == "input_json_delta") {
      b->partial_json += string_field(*d, "partial_json").value_or("");
      b->saw_input_delta = true;
    }
  }

  void on_message_delta(const json& j) {
    if (const json* d = field(j, "delta")) {
      if (auto sr = string_field(*d, "stop_reason")) stop_reason_ = *sr;
      if (auto ss = string_field(*d, "stop_sequence")) stop_sequence_ = *ss;
    }
    if (const json* u = field(j, "usage")) overlay_usage(*u);
  }

  // message_delta's usage overlays message_start's field by field: it usually holds only
  // output_tokens, and a field it omits keeps its earlier value.
  void overlay_usage(const json& u) {
    for (const char* f : kUsageFields)
      if (auto v = int_field(u, f)) usage_[f] = *v;
    if (const json* cc = field(u, "cache_creation")) {
      if (auto v = int_field(*cc, "ephemeral_5m_input_tokens"))
        usage_["ephemeral_5m_input_tokens"] = *v;
      if (auto v = int_field(*cc, "ephemeral_1h_input_tokens"))
        usage_["ephemeral_1h_input_tokens"] = *v;
    }
  }

  void on_error(const json& j) {
    error_ = field(j, "error") ? j["error"] : j;
    const std::string kind = string_field(error_, "type").value_or("error");
    set_failure({status_for_error_type(kind), kind,
                 string_field(error_, "message").value_or(error_.dump())});
  }

  // Mid-stream errors carry no HTTP status; map the documented types to the status the
  // same error has before the stream starts (docs.anthropic.com/en/api/errors).
  static int status_for_error_type(const std::string& kind) {
    if (kind == "overloaded_error") return 529;
    if (kind == "rate_limit_error") return 429;
    if (kind == "api_error") return 500;
    if (kind == "authentication_error") return 401;
    if (kind == "permission_error") return 403;
    if (kind == "not_found_error") return 404;
    if (kind == "request_too_large") return 413;
    return 400;
  }

  Block* block_at(const json& j) {
    auto index = int_field(j, "index");
    if (!index) return nullptr;
    auto it = blocks_.find(*index);
    return it == blocks_.end() ? nullptr : &it->second;
  }

  static std::string effective_json(const Block& b) {
    if (b.saw_input_delta || b.start_input.is_null()) return b.partial_json;
    return b.start_input.dump();
  }
  // {} for a tool without input (the only delta is ""), null when the JSON is invalid.
  static json tool_input(const Block& b) {
    const std::string raw = effective_json(b);
    if (raw.empty()) return json::object();
    auto j = parse_json(raw);
    return j ? *j : json(nullptr);
  }

  std::string stop_reason() const {
    if (failure_) return "error";
    if (stop_reason_ == "max_tokens" || stop_reason_ == "model_context_window_exceeded")
      return "length";
    if (stop_reason_ == "tool_use") return "toolUse";
    if (stop_reason_ == "refusal") return "error";
    return "stop";
  }

  std::map<int64_t, Block> blocks_;
  json message_id_ = nullptr;
  json stop_reason_ = nullptr, stop_sequence_ = nullptr;
  json usage_ = json::object();
  bool saw_message_stop_ = false;
};

}  // namespace

std::unique_ptr<StreamDecoder> make_anthropic_decoder(DecoderContext context) {
  return std::make_unique<AnthropicDecoder>(std::move(context));
}

}  // namespace moat::agent::providers
