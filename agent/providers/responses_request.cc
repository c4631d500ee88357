// agent/providers/responses_request.cc: the Responses API request body.
#include <algorithm>

#include "agent/providers/json_util.h"
#include "agent/providers/request_body.h"

namespace moat::agent::providers {
namespace {

void add_user_part(JsonElement b, std::string_view t, json& parts) {
  if (t == "text") parts.push_back({{"type", "input_text"}, {"text", json_member(b, "text")}});
  if (t == "image")
    parts.push_back({{"type", "input_image"},
                     {"image_url", "data:" + std::string(string_member(b, "mimeType")) +
                                       ";base64," + std::string(string_member(b, "data"))}});
}

json user_parts(std::optional<JsonElement> content) {
  return wire_blocks(content, "input_text", add_user_part);
}

void append_assistant(JsonElement m, json& input) {
  const auto content = sessions::as_array(member(m, "content"));
  if (!content) return;
  for (JsonElement b : *content) {
    const std::string_view t = string_member(b, "type");
    if (t == "text" && !string_member(b, "text").empty()) {
      input.push_back(
          {{"type", "message"},
           {"role", "assistant"},
           {"content", json::array({{{"type", "output_text"},
                                     {"text", std::string(string_member(b, "text"))}}})}});
    } else if (t == "toolCall") {
      const auto args = member(b, "arguments");
      input.push_back(
          {{"type", "function_call"},
           {"call_id", json_member(b, "id")},
           {"name", json_member(b, "name")},
           {"arguments", args ? sessions::to_nlohmann(*args).dump() : std::string("{}")}});
    }
    // Reasoning is not sent back: with store:false the API needs its encrypted form,
    // which we do not request.
  }
}

}  // namespace

json responses_body(const ModelRequest& request, const BodyOptions& options) {
  json input = json::array();
  RoleWriters write;
  write.user = [&](JsonElement m) {
    input.push_back({{"role", "user"}, {"content", user_parts(member(m, "content"))}});
  };
  write.assistant = [&](JsonElement m) { append_assistant(m, input); };
  // An output with an image is a list of input_text and input_image parts (the API takes
  // either a string or such a list); text alone stays a string.
  write.tool_result = [&](const json& id, std::optional<JsonElement> content) {
    json parts = user_parts(content);
    const bool image = std::any_of(parts.begin(), parts.end(),
                                   [](const json& p) { return p["type"] == "input_image"; });
    input.push_back({{"type", "function_call_output"},
                     {"call_id", id},
                     {"output", image ? std::move(parts) : json(joined_text(content))}});
  };
  for_each_message(request, write);
  json body = streaming_body(options);
  body["input"] = std::move(input);
  body["store"] = false;
  body["max_output_tokens"] = request.max_output_tokens;
  if (!request.system.empty()) body["instructions"] = request.system;
  if (!request.tools.empty()) {
    json tools = json::array();
    for (const auto& t : request.tools)
      tools.push_back({{"type", "function"},
                       {"name", t.name},
                       {"description", t.description},
                       {"parameters", t.parameters}});
    body["tools"] = tools;
    body["tool_choice"] = "auto";
  }
  return body;
}

}  // namespace moat::agent::providers
