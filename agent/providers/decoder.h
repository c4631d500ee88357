// agent/providers/decoder.h: the per-API half of a stream: SSE events in, an answer out.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/provider.h"
#include "base/sse.h"
#include "base/result.h"

namespace moat::agent::providers {

enum class Api { kOpenAiChat, kAnthropic, kOpenAiResponses };

// "openai-chat" | "anthropic" | "openai-responses".
Result<Api> parse_api(std::string_view name);
std::string_view api_name(Api api);
// The URL path each API posts to, after the provider's base_url.
std::string_view api_path(Api api);

// A failure the stream itself reported (an error event, an error object inside a chunk, a
// malformed chunk) or implied (it ended before its terminal event). `status` is the HTTP
// status the failure corresponds to, so retry rules and exit codes treat it like one.
struct StreamFailure {
  int status = 0;
  std::string kind;     // the provider's error type or code: "overloaded_error", ...
  std::string message;  // the provider's own words
};

struct DecoderContext {
  std::string provider;  // written into the message's "provider"
  std::string model;     // the requested model id; the stream's own model when empty
  const StreamCallbacks* stream = nullptr;  // optional live display of text and reasoning
};

class StreamDecoder {
 public:
  virtual ~StreamDecoder() = default;
  virtual void on_event(const SseEvent& event) = 0;
  // The normalised parse (fields listed in wire-fixtures/README.md), for tests and
  // `moat provider parse`. `comment_lines` comes from the SSE parser.
  virtual nlohmann::json normalized(size_t comment_lines) const = 0;
  // The assistant message in moat's shape (agent/provider.h), whatever the stream held;
  // check failure() first to know whether it is an answer.
  virtual Message message() const = 0;
  // Set once the stream reported an error, a chunk did not parse, or (after end_of_stream)
  // the terminal event never came. The client stops reading on the first one.
  virtual std::optional<StreamFailure> failure() const = 0;
  // The transport reached EOF: from now on a missing terminal event is a failure.
  virtual void end_of_stream() = 0;
};

std::unique_ptr<StreamDecoder> make_decoder(Api api, DecoderContext context);
std::unique_ptr<StreamDecoder> make_openai_chat_decoder(DecoderContext context);
std::unique_ptr<StreamDecoder> make_anthropic_decoder(DecoderContext context);
std::unique_ptr<StreamDecoder> make_responses_decoder(DecoderContext context);

// Pieces of moat's assistant message shared by the three decoders.
// A toolCall block. Arguments that are empty become {} (servers stream "" for a call without
// parameters); arguments that do not parse as a JSON object, or a call the stream never
// closed (`closed` false), become {} plus "rawArguments" and "incomplete": true, so the loop
// can refuse to execute the call.
nlohmann::json tool_call_block(const std::string& id, const std::string& name,
                               const std::string& raw_arguments, bool closed = true);
nlohmann::json usage_json(int64_t input, int64_t output, int64_t cache_read, int64_t cache_write,
                          int64_t cache_write_1h);

// OpenAI's two APIs count tokens alike under different names: Chat's prompt/completion,
// Responses' input/output, each with a details object holding the cached (input) and
// reasoning (output) part.
struct OpenAiUsageNames {
  const char* input;
  const char* output;
  const char* input_details;
  const char* output_details;
};
inline constexpr OpenAiUsageNames kChatUsageNames{
    "prompt_tokens", "completion_tokens", "prompt_tokens_details", "completion_tokens_details"};
inline constexpr OpenAiUsageNames kResponsesUsageNames{
    "input_tokens", "output_tokens", "input_tokens_details", "output_tokens_details"};
// The usage object of the normalised parse: the counts as sent, null where absent.
nlohmann::json normalized_openai_usage(const nlohmann::json& usage, const OpenAiUsageNames& names);
// moat's usage (usage_json): the input count includes the cached part, and moat's "input"
// bucket is the uncached rest.
nlohmann::json openai_message_usage(const nlohmann::json& usage, const OpenAiUsageNames& names);

// Runs `body` through SseParser and the decoder, fed in pieces cut at `cuts` (sorted byte
// offsets; empty means one piece). Used by `moat provider parse` and the replay tests.
struct DecodedStream {
  nlohmann::json normalized;
  Message message;
  std::optional<StreamFailure> failure;
};
DecodedStream decode_body(Api api, std::string_view body, const std::vector<size_t>& cuts,
                          DecoderContext context = {});

}  // namespace moat::agent::providers
