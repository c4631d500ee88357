// agent/providers/openai_chat_request.cc: the Chat Completions request body.
#include "agent/providers/json_util.h"
#include "agent/providers/request_body.h"

namespace moat::agent::providers {

std::string joined_text(std::optional<JsonElement> content) {
  std::string out;
  if (!content) return out;
  std::string_view text;
  if (content->get_string().get(text) == simdjson::SUCCESS) return std::string(text);
  const auto blocks = sessions::as_array(content);
  if (!blocks) return out;
  for (JsonElement b : *blocks) {
    if (string_member(b, "type") != "text") continue;
    if (!out.empty()) out += "\n";
    out += string_member(b, "text");
  }
  return out;
}

std::string tool_result_text(std::optional<JsonElement> content) {
  std::string out = joined_text(content);
  const auto blocks = sessions::as_array(content);
  if (!blocks) return out;
  for (JsonElement b : *blocks) {
    if (string_member(b, "type") != "image") continue;
    const std::string_view data = string_member(b, "data");
    const std::size_t pad = data.ends_with("==") ? 2 : data.ends_with("=") ? 1 : 0;
    const std::size_t bytes = data.size() / 4 * 3 - pad;
    out += std::string(out.empty() ? "" : "\n") + "[image " +
           std::string(string_member(b, "mimeType")) + ", " + std::to_string(bytes) +
           " bytes, returned by the tool: this API takes no image in a tool result]";
  }
  return out;
}

nlohmann::json streaming_body(const BodyOptions& options) {
  return {{"model", options.model}, {"stream", true}};
}

void for_each_message(const ModelRequest& request, const RoleWriters& write) {
  sessions::MessageReader reader;
  reader.for_each(request.messages, [&](JsonElement m) {
    const std::string_view role = string_member(m, "role");
    if (role == "user") write.user(m);
    else if (role == "assistant") write.assistant(m);
    else if (role == "toolResult")
      write.tool_result(json_member(m, "toolCallId"), member(m, "content"));
  });
}

namespace {

json user_content(std::optional<JsonElement> content) {
  const auto array = sessions::as_array(content);
  if (!array) return joined_text(content);
  const simdjson::dom::array blocks = *array;
  bool has_image = false;
  for (JsonElement b : blocks) has_image |= string_member(b, "type") == "image";
  if (!has_image) return joined_text(content);
  json parts = json::array();
  for (JsonElement b : blocks) {
    const std::string_view t = string_member(b, "type");
    if (t == "text") parts.push_back({{"type", "text"}, {"text", json_member(b, "text")}});
    if (t == "image")
      parts.push_back({{"type", "image_url"},
                       {"image_url",
                        {{"url", "data:" + std::string(string_member(b, "mimeType")) + ";base64," +
                                     std::string(string_member(b, "data"))}}}});
  }
  return parts;
}

// The wire carries a call's arguments as a JSON string, not an object.
std::string arguments_text(JsonElement call) {
  auto args = member(call, "arguments");
  return args ? sessions::to_nlohmann(*args).dump() : std::string("{}");
}

json assistant_message(JsonElement msg) {
  json out = {{"role", "assistant"}};
  const auto content = member(msg, "content");
  const std::string text = joined_text(content);
  out["content"] = text.empty() ? json(nullptr) : json(text);
  json calls = json::array();
  if (const auto blocks = sessions::as_array(content))
    for (JsonElement b : *blocks) {
      if (string_member(b, "type") != "toolCall") continue;
      calls.push_back(
          {{"id", json_member(b, "id")},
           {"type", "function"},
           {"function", {{"name", json_member(b, "name")}, {"arguments", arguments_text(b)}}}});
    }
  if (!calls.empty()) out["tool_calls"] = calls;
  return out;
}

}  // namespace

json openai_chat_body(const ModelRequest& request, const BodyOptions& options) {
  json messages = json::array();
  if (!request.system.empty())
    messages.push_back({{"role", "system"}, {"content", request.system}});
  RoleWriters write;
  write.user = [&](JsonElement m) {
    messages.push_back({{"role", "user"}, {"content", user_content(member(m, "content"))}});
  };
  write.assistant = [&](JsonElement m) {
    json a = assistant_message(m);
    if (!a["content"].is_null() || a.contains("tool_calls")) messages.push_back(a);
  };
  write.tool_result = [&](const json& id, std::optional<JsonElement> content) {
    messages.push_back(
        {{"role", "tool"}, {"tool_call_id", id}, {"content", tool_result_text(content)}});
  };
  for_each_message(request, write);
  json body = streaming_body(options);
  body["messages"] = std::move(messages);
  body["stream_options"] = {{"include_usage", true}};
  body[options.legacy_max_tokens ? "max_tokens" : "max_completion_tokens"] =
      request.max_output_tokens;
  if (!request.tools.empty()) {
    json tools = json::array();
    for (const auto& t : request.tools)
      tools.push_back(
          {{"type", "function"},
           {"function",
            {{"name", t.name}, {"description", t.description}, {"parameters", t.parameters}}}});
    body["tools"] = tools;
    body["tool_choice"] = "auto";
  }
  return body;
}

}  // namespace moat::agent::providers
