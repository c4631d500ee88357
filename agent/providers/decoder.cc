// agent/providers/decoder.cc: choosing a decoder, the message pieces they share, and
// decoding a whole recorded body.
#include "agent/providers/decoder.h"

#include "agent/providers/json_util.h"
#include "base/log.h"

namespace moat::agent::providers {

Result<Api> parse_api(std::string_view name) {
  if (name == "openai-chat") return Api::kOpenAiChat;
  if (name == "anthropic") return Api::kAnthropic;
  if (name == "openai-responses") return Api::kOpenAiResponses;
  return fail("unknown API " + ::moat::quoted(name) +
              " (expected openai-chat, anthropic or openai-responses)");
}

std::string_view api_name(Api api) {
  switch (api) {
    case Api::kOpenAiChat: return "openai-chat";
    case Api::kAnthropic: return "anthropic";
    case Api::kOpenAiResponses: return "openai-responses";
  }
  return "unknown";
}

std::unique_ptr<StreamDecoder> make_decoder(Api api, DecoderContext context) {
  switch (api) {
    case Api::kOpenAiChat: return make_openai_chat_decoder(std::move(context));
    case Api::kAnthropic: return make_anthropic_decoder(std::move(context));
    case Api::kOpenAiResponses: return make_responses_decoder(std::move(context));
  }
  return nullptr;
}

nlohmann::json tool_call_block(const std::string& id, const std::string& name,
                               const std::string& raw_arguments, bool closed) {
  json block = {{"type", "toolCall"}, {"id", id}, {"name", name}};
  std::optional<json> parsed = raw_arguments.empty() ? std::optional<json>(json::object())
                                                     : parse_json(raw_arguments);
  if (closed && parsed && parsed->is_object()) {
    block["arguments"] = std::move(*parsed);
  } else {
    block["arguments"] = json::object();
    block["rawArguments"] = raw_arguments;
    block["incomplete"] = true;
  }
  return block;
}

nlohmann::json usage_json(int64_t input, int64_t output, int64_t cache_read,
                          int64_t cache_write, int64_t cache_write_1h) {
  return {{"input", input}, {"output", output}, {"cacheRead", cache_read},
          {"cacheWrite", cache_write}, {"cacheWrite1h", cache_write_1h}};
}

DecodedStream decode_body(Api api, std::string_view body, const std::vector<size_t>& cuts,
                          DecoderContext context) {
  auto decoder = make_decoder(api, std::move(context));
  SseParser parser([&](const SseEvent& ev) { decoder->on_event(ev); });
  size_t start = 0;
  for (size_t cut : cuts) {
    if (cut <= start || cut >= body.size()) continue;
    parser.feed(body.substr(start, cut - start));
    start = cut;
  }
  parser.feed(body.substr(start));
  parser.finish();
  decoder->end_of_stream();
  return {decoder->normalized(parser.comment_lines()), decoder->message(), decoder->failure()};
}

}  // namespace moat::agent::providers
