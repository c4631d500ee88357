// agent/providers/request_body.h: moat's request (system, tools, messages) in each API's
// wire shape.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "agent/provider.h"
#include "agent/providers/json_util.h"
#include "sessions/message_dom.h"

namespace moat::agent::providers {

// Messages are read from the session's bytes with simdjson (sessions/message_dom.h): a
// resumed session's messages become wire JSON without first becoming moat's JSON objects.
using sessions::json_member;
using sessions::JsonElement;
using sessions::member;
using sessions::string_member;

struct BodyOptions {
  std::string model;
  // OpenAI-compatible servers (vLLM, llama.cpp, Ollama) predate max_completion_tokens.
  bool legacy_max_tokens = false;
  // Anthropic: cache_control breakpoints on the stable prefix (tools, system) and on the
  // last message, so each turn reads the previous turn's prefix from the cache.
  bool cache_breakpoints = true;
  // Anthropic extended thinking: tokens the model may think with (0 = off). Other APIs
  // ignore it.
  int64_t thinking_budget = 0;
};

// POST /v1/chat/completions, streaming with include_usage.
nlohmann::json openai_chat_body(const ModelRequest& request, const BodyOptions& options);
// POST /v1/messages, streaming.
nlohmann::json anthropic_body(const ModelRequest& request, const BodyOptions& options);
// POST /v1/responses, streaming, store:false (the whole context is sent each turn).
nlohmann::json responses_body(const ModelRequest& request, const BodyOptions& options);

// The text blocks of a content array (or a plain string) joined with "\n".
std::string joined_text(std::optional<JsonElement> content);

// moat's message content as an array of wire blocks: a plain string is one
// {"type": text_type, "text": ...} block; each block of an array goes through
// `convert(block, its type, out)`, which appends what the API wants for it (maybe nothing);
// anything else is no blocks.
template <typename Convert>
nlohmann::json wire_blocks(std::optional<JsonElement> content, const char* text_type,
                           Convert convert) {
  nlohmann::json out = nlohmann::json::array();
  std::string_view text;
  if (content && content->get_string().get(text) == simdjson::SUCCESS) {
    out.push_back({{"type", text_type}, {"text", std::string(text)}});
    return out;
  }
  const auto blocks = sessions::as_array(content);
  if (!blocks) return out;
  for (JsonElement b : *blocks) convert(b, string_member(b, "type"), out);
  return out;
}

// A tool result's content as text, for an API whose tool results take no image (Chat
// Completions): its text blocks joined with "\n", each image block as a line naming its type
// and size, so the model knows one came.
std::string tool_result_text(std::optional<JsonElement> content);

// What an API does with each of moat's message roles ("user", "assistant", "toolResult"); a
// message of another role is not sent. A tool result comes as its call's id and its content.
struct RoleWriters {
  std::function<void(JsonElement message)> user, assistant;
  std::function<void(const nlohmann::json& call_id, std::optional<JsonElement> content)>
      tool_result;
};
void for_each_message(const ModelRequest& request, const RoleWriters& write);

// What every API's body starts with: the model, and a streamed answer.
nlohmann::json streaming_body(const BodyOptions& options);

}  // namespace moat::agent::providers
