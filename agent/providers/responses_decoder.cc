// agent/providers/responses_decoder.cc: OpenAI Responses API stream events.
#include <map>

#include "agent/providers/decoder_base.h"

namespace moat::agent::providers {
namespace {

struct Item {
  std::string type;  // function_call | message | reasoning | ...
  json id = nullptr, call_id = nullptr, name = nullptr;
  std::optional<std::string> arguments;  // function_call only
  bool done = false;                     // response.output_item.done arrived
};

class ResponsesDecoder final : public DecoderBase {
 public:
  explicit ResponsesDecoder(DecoderContext ctx) : DecoderBase(std::move(ctx)) {}

  void on_event(const SseEvent& ev) override {
    ++data_events_;
    auto j = data_object(ev, "event data is not a JSON object");
    if (!j) return;
    const std::string type = string_field(*j, "type").value_or(ev.type);
    if (type == "response.output_item.added" || type == "response.output_item.done") {
      on_item(*j, type == "response.output_item.done");
    } else if (type == "response.function_call_arguments.delta") {
      if (Item* it = item_at(*j)) *it->arguments += string_field(*j, "delta").value_or("");
    } else if (type == "response.function_call_arguments.done") {
      if (Item* it = item_at(*j))
        it->arguments = string_field(*j, "arguments").value_or(*it->arguments);
    } else if (type == "response.output_text.delta") {
      append_piece(text_, string_field(*j, "delta").value_or(""), false);
    } else if (type == "response.reasoning_summary_text.delta" ||
               type == "response.reasoning_text.delta") {
      append_piece(reasoning_, string_field(*j, "delta").value_or(""), true);
    } else if (type == "response.completed" || type == "response.failed" ||
               type == "response.incomplete") {
      on_final(*j);
    } else if (type == "response.created" || type == "response.in_progress") {
      if (const json* r = field(*j, "response"))
        model_ = string_field(*r, "model").value_or(model_);
    } else if (type == "error") {
      on_error(*j);
    }
  }

  void end_of_stream() override {
    if (status_.is_null())
      set_failure({502, "incomplete_stream", "stream ended before response.completed"});
  }

  json normalized(size_t /*comment_lines*/) const override {
    json items = json::array();
    for (const auto& [index, it] : items_) {
      json args = it.arguments ? json(*it.arguments) : json(nullptr);
      json parsed = nullptr;
      if (it.arguments)
        parsed = it.arguments->empty() ? json::object()
                                       : parse_json(*it.arguments).value_or(json(nullptr));
      items.push_back({{"output_index", index},
                       {"type", it.type},
                       {"id", it.id},
                       {"call_id", it.call_id},
                       {"name", it.name},
                       {"arguments", args},
                       {"arguments_json", parsed}});
    }
    return {{"text", text_},
            {"items", items},
            {"status", status_},
            {"usage", normalized_usage()},
            {"error", error_},
            {"response_error", response_error_},
            {"incomplete_details", incomplete_details_},
            {"data_events", data_events_}};
  }

  Message message() const override {
    json content = json::array();
    if (!reasoning_.empty()) content.push_back({{"type", "thinking"}, {"thinking", reasoning_}});
    if (!text_.empty()) content.push_back({{"type", "text"}, {"text", text_}});
    bool has_calls = false;
    for (const auto& [index, it] : items_) {
      if (it.type != "function_call") continue;
      has_calls = true;
      // call_id is what function_call_output must name; the item id is kept for replay.
      json block = tool_call_block(it.call_id.is_string() ? it.call_id.get<std::string>() : "",
                                   it.name.is_string() ? it.name.get<std::string>() : "",
                                   it.arguments.value_or(""), it.done || status_ == "completed");
      if (it.id.is_string()) block["itemId"] = it.id;
      content.push_back(block);
    }
    return answer(content, stop_reason(has_calls), message_usage());
  }

 private:
  void on_item(const json& j, bool done) {
    auto index = int_field(j, "output_index");
    const json* item = field(j, "item");
    if (!index || !item) return;
    Item& it = items_[*index];
    it.type = string_field(*item, "type").value_or(it.type);
    for (auto [key, dst] : {std::pair{"id", &it.id}, {"call_id", &it.call_id}, {"name", &it.name}})
      if (const json* v = field(*item, key)) *dst = *v;
    if (it.type == "function_call") {
      auto args = string_field(*item, "arguments");
      if (!it.arguments) it.arguments = args.value_or("");
      else if (done && args) it.arguments = *args;  // the final item is authoritative
    }
    it.done = it.done || done;
  }

  // Deltas name their item by output_index (and item_id); prefer the index.
  Item* item_at(const json& j) {
    if (auto index = int_field(j, "output_index")) {
      auto it = items_.find(*index);
      if (it != items_.end() && it->second.arguments) return &it->second;
    }
    if (auto id = string_field(j, "item_id"))
      for (auto& [index, it] : items_)
        if (it.id == *id && it.arguments) return &it;
    return nullptr;
  }

  void on_final(const json& j) {
    const json* r = field(j, "response");
    if (!r) return;
    status_ = raw_field(*r, "status");
    usage_ = raw_field(*r, "usage");
    response_error_ = raw_field(*r, "error");
    incomplete_details_ = raw_field(*r, "incomplete_details");
    model_ = string_field(*r, "model").value_or(model_);
    if (status_ == "failed") {
      const json& e = response_error_;
      set_failure({status_for_code(string_field(e, "code").value_or("")),
                   string_field(e, "code").value_or("response_failed"),
                   string_field(e, "message").value_or("response failed")});
    }
  }

  // The documented shape is {"type":"error","code","message","param"}; recordings also
  // show the fields nested under "error".
  void on_error(const json& j) {
    if (const json* e = field(j, "error"); e && e->is_object()) {
      error_ = *e;
    } else {
      error_ = j;
      error_.erase("type");
      error_.erase("sequence_number");
    }
    const std::string code =
        string_field(error_, "code").value_or(string_field(error_, "type").value_or("error"));
    set_failure(
        {status_for_code(code), code, string_field(error_, "message").value_or(error_.dump())});
  }

  static int status_for_code(const std::string& code) {
    if (code == "rate_limit_exceeded" || code == "insufficient_quota") return 429;
    if (code == "server_error" || code == "server_is_overloaded") return 500;
    if (code == "invalid_prompt" || code == "context_length_exceeded") return 400;
    return 500;
  }

  json normalized_usage() const {
    return usage_.is_object() ? normalized_openai_usage(usage_, kResponsesUsageNames)
                              : json(nullptr);
  }
  json message_usage() const { return openai_message_usage(usage_, kResponsesUsageNames); }

  std::string stop_reason(bool has_calls) const {
    if (failure_ || status_ == "failed") return "error";
    if (status_ == "incomplete") {
      const auto reason = string_field(incomplete_details_, "reason").value_or("");
      return reason == "content_filter" ? "error" : "length";
    }
    return has_calls ? "toolUse" : "stop";
  }

  std::map<int64_t, Item> items_;
  std::string text_, reasoning_;
  json status_ = nullptr, usage_ = nullptr;
  json response_error_ = nullptr, incomplete_details_ = nullptr;
};

}  // namespace

std::unique_ptr<StreamDecoder> make_responses_decoder(DecoderContext context) {
  return std::make_unique<ResponsesDecoder>(std::move(context));
}

}  // namespace moat::agent::providers
