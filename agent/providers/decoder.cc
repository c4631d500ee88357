// agent/providers/decoder.cc: choosing a decoder, the message pieces they share, and
// decoding a whole recorded body.
#include "agent/providers/decoder.h"

#include "agent/providers/json_util.h"
#include "base/log.h"

namespace moat::agent::providers {

namespace {

// One row per API, in the enum's order: its name in the configuration, its endpoint below the
// provider's base URL, its decoder.
struct ApiRow {
  Api api;
  std::string_view name;
  std::string_view path;
  std::unique_ptr<StreamDecoder> (*make_decoder)(DecoderContext);
};
constexpr ApiRow kApis[] = {
    {Api::kOpenAiChat, "openai-chat", "/chat/completions", make_openai_chat_decoder},
    {Api::kAnthropic, "anthropic", "/messages", make_anthropic_decoder},
    {Api::kOpenAiResponses, "openai-responses", "/responses", make_responses_decoder},
};
static_assert(
    [] {
      for (std::size_t i = 0; i < std::size(kApis); ++i)
        if (kApis[i].api != static_cast<Api>(i)) return false;
      return std::size(kApis) == static_cast<std::size_t>(Api::kOpenAiResponses) + 1;
    }(),
    "kApis has one row per Api, in the enum's order");

const ApiRow& row_of(Api api) { return kApis[static_cast<std::size_t>(api)]; }

}  // namespace

Result<Api> parse_api(std::string_view name) {
  for (const ApiRow& row : kApis)
    if (row.name == name) return row.api;
  return fail("unknown API " + ::moat::quoted(name) +
              " (expected openai-chat, anthropic or openai-responses)");
}

std::string_view api_name(Api api) { return row_of(api).name; }
std::string_view api_path(Api api) { return row_of(api).path; }

std::unique_ptr<StreamDecoder> make_decoder(Api api, DecoderContext context) {
  return row_of(api).make_decoder(std::move(context));
}

nlohmann::json tool_call_block(const std::string& id, const std::string& name,
                               const std::string& raw_arguments, bool closed) {
  json block = {{"type", "toolCall"}, {"id", id}, {"name", name}};
  std::optional<json> parsed =
      raw_arguments.empty() ? std::optional<json>(json::object()) : parse_json(raw_arguments);
  if (closed && parsed && parsed->is_object()) {
    block["arguments"] = std::move(*parsed);
  } else {
    block["arguments"] = json::object();
    block["rawArguments"] = raw_arguments;
    block["incomplete"] = true;
  }
  return block;
}

nlohmann::json usage_json(int64_t input, int64_t output, int64_t cache_read, int64_t cache_write,
                          int64_t cache_write_1h) {
  return {{"input", input},
          {"output", output},
          {"cacheRead", cache_read},
          {"cacheWrite", cache_write},
          {"cacheWrite1h", cache_write_1h}};
}

nlohmann::json normalized_openai_usage(const nlohmann::json& usage, const OpenAiUsageNames& names) {
  json cached = nullptr, reasoning = nullptr;
  if (const json* d = field(usage, names.input_details))
    cached = int_or_null(int_field(*d, "cached_tokens"));
  if (const json* d = field(usage, names.output_details))
    reasoning = int_or_null(int_field(*d, "reasoning_tokens"));
  return {{names.input, int_or_null(int_field(usage, names.input))},
          {names.output, int_or_null(int_field(usage, names.output))},
          {"total_tokens", int_or_null(int_field(usage, "total_tokens"))},
          {"cached_tokens", cached},
          {"reasoning_tokens", reasoning}};
}

nlohmann::json openai_message_usage(const nlohmann::json& usage, const OpenAiUsageNames& names) {
  const int64_t input = int_field(usage, names.input).value_or(0);
  int64_t cached = 0;
  if (const json* d = field(usage, names.input_details))
    cached = int_field(*d, "cached_tokens").value_or(0);
  return usage_json(input - cached, int_field(usage, names.output).value_or(0), cached, 0, 0);
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
