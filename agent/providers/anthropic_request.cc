// agent/providers/anthropic_request.cc: the Messages request body, with cache breakpoints.
#include "agent/providers/json_util.h"
#include "agent/providers/request_body.h"

namespace moat::agent::providers {
namespace {

const json kEphemeral = {{"type", "ephemeral"}};

// One block of moat's content in the Messages API's shape.
void add_block(JsonElement b, std::string_view t, json& out) {
  if (t == "text" && !string_member(b, "text").empty()) {
    out.push_back({{"type", "text"}, {"text", std::string(string_member(b, "text"))}});
  } else if (t == "image") {
    out.push_back({{"type", "image"},
                   {"source",
                    {{"type", "base64"},
                     {"media_type", json_member(b, "mimeType")},
                     {"data", json_member(b, "data")}}}});
  } else if (t == "thinking") {
    // A thinking block is only accepted back with the signature Anthropic gave it; a
    // redacted one goes back as the encrypted data it came as.
    if (auto data = string_member(b, "redacted"); !data.empty())
      out.push_back({{"type", "redacted_thinking"}, {"data", std::string(data)}});
    else if (auto sig = string_member(b, "signature"); !sig.empty())
      out.push_back({{"type", "thinking"},
                     {"thinking", json_member(b, "thinking")},
                     {"signature", std::string(sig)}});
  } else if (t == "toolCall") {
    json input = json_member(b, "arguments");
    out.push_back({{"type", "tool_use"},
                   {"id", json_member(b, "id")},
                   {"name", json_member(b, "name")},
                   {"input", input.is_object() ? input : json::object()}});
  }
}

json content_blocks(std::optional<JsonElement> content) {
  return wire_blocks(content, "text", add_block);
}

json tool_result_block(JsonElement m) {
  json block = {{"type", "tool_result"},
                {"tool_use_id", json_member(m, "toolCallId")},
                {"content", content_blocks(member(m, "content"))}};
  if (sessions::true_member(m, "isError")) block["is_error"] = true;
  return block;
}

// Consecutive tool results travel in one user message, as the API requires.
json wire_messages(const sessions::MessageList& messages) {
  json out = json::array();
  sessions::MessageReader reader;
  reader.for_each(messages, [&](JsonElement m) {
    const std::string role(string_member(m, "role"));
    if (role == "toolResult") {
      const bool extend = !out.empty() && out.back()["role"] == "user" &&
                          !out.back()["content"].empty() &&
                          out.back()["content"].back().value("type", "") == "tool_result";
      if (!extend) out.push_back({{"role", "user"}, {"content", json::array()}});
      out.back()["content"].push_back(tool_result_block(m));
    } else if (role == "user" || role == "assistant") {
      json blocks = content_blocks(member(m, "content"));
      if (blocks.empty()) return;
      // Roles alternate on the wire: a message the person typed after the tool results
      // (steering) joins their user message, after its tool_result blocks as the API wants.
      if (!out.empty() && out.back()["role"] == role) {
        for (auto& b : blocks) out.back()["content"].push_back(std::move(b));
      } else {
        out.push_back({{"role", role}, {"content", blocks}});
      }
    }
  });
  return out;
}

}  // namespace

json anthropic_body(const ModelRequest& request, const BodyOptions& options) {
  json body = {
      {"model", options.model}, {"max_tokens", request.max_output_tokens}, {"stream", true}};
  if (options.thinking_budget > 0) {
    // Extended thinking: budget_tokens must stay below max_tokens, which counts the
    // thinking too, so the answer keeps its whole output allowance on top of the budget.
    body["thinking"] = {{"type", "enabled"}, {"budget_tokens", options.thinking_budget}};
    body["max_tokens"] = request.max_output_tokens + options.thinking_budget;
  }
  json tools = json::array();
  for (const auto& t : request.tools)
    tools.push_back(
        {{"name", t.name}, {"description", t.description}, {"input_schema", t.parameters}});
  json system = json::array();
  if (!request.system.empty()) system.push_back({{"type", "text"}, {"text", request.system}});
  json messages = wire_messages(request.messages);
  if (options.cache_breakpoints) {
    // The cache key covers tools, then system, then messages: a breakpoint after the system
    // prompt caches the stable prefix; one on the last block of the last message lets the
    // next turn read everything this turn sent (docs.anthropic.com, prompt caching).
    if (!system.empty()) system.back()["cache_control"] = kEphemeral;
    else if (!tools.empty()) tools.back()["cache_control"] = kEphemeral;
    if (!messages.empty() && !messages.back()["content"].empty())
      messages.back()["content"].back()["cache_control"] = kEphemeral;
  }
  if (!tools.empty()) body["tools"] = tools;
  if (!system.empty()) body["system"] = system;
  body["messages"] = messages;
  return body;
}

}  // namespace moat::agent::providers
