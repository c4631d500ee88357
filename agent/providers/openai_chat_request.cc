// agent/providers/openai_chat_request.cc: the Chat Completions request body.
#include "agent/providers/json_util.h"
#include "agent/providers/request_body.h"

namespace moat::agent::providers {

std::string joined_text(const json& content) {
  if (content.is_string()) return content.get<std::string>();
  std::string out;
  if (!content.is_array()) return out;
  for (const auto& b : content) {
    if (string_field(b, "type").value_or("") != "text") continue;
    if (!out.empty()) out += "\n";
    out += string_field(b, "text").value_or("");
  }
  return out;
}

nlohmann::json streaming_body(const BodyOptions& options) {
  return {{"model", options.model}, {"stream", true}};
}

void for_each_message(const ModelRequest& request, const RoleWriters& write) {
  for (const auto& m : request.messages) {
    const std::string role = string_field(m, "role").value_or("");
    if (role == "user") write.user(m);
    else if (role == "assistant") write.assistant(m);
    else if (role == "toolResult")
      write.tool_result(raw_field(m, "toolCallId"), joined_text(raw_field(m, "content")));
  }
}

namespace {

json user_content(const json& content) {
  if (!content.is_array()) return joined_text(content);
  bool has_image = false;
  for (const auto& b : content) has_image |= string_field(b, "type").value_or("") == "image";
  if (!has_image) return joined_text(content);
  json parts = json::array();
  for (const auto& b : content) {
    const std::string t = string_field(b, "type").value_or("");
    if (t == "text") parts.push_back({{"type", "text"}, {"text", b["text"]}});
    if (t == "image")
      parts.push_back({{"type", "image_url"},
                       {"image_url",
                        {{"url", "data:" + string_field(b, "mimeType").value_or("") + ";base64," +
                                     string_field(b, "data").value_or("")}}}});
  }
  return parts;
}

json assistant_message(const json& msg) {
  json out = {{"role", "assistant"}};
  const json content = raw_field(msg, "content");
  const std::string text = joined_text(content);
  out["content"] = text.empty() ? json(nullptr) : json(text);
  json calls = json::array();
  if (content.is_array())
    for (const auto& b : content) {
      if (string_field(b, "type").value_or("") != "toolCall") continue;
      // The wire carries arguments as a JSON string, not an object.
      calls.push_back(
          {{"id", raw_field(b, "id")},
           {"type", "function"},
           {"function",
            {{"name", raw_field(b, "name")},
             {"arguments",
              raw_field(b, "arguments").is_null() ? std::string("{}") : b["arguments"].dump()}}}});
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
  write.user = [&](const json& m) {
    messages.push_back({{"role", "user"}, {"content", user_content(raw_field(m, "content"))}});
  };
  write.assistant = [&](const json& m) {
    json a = assistant_message(m);
    if (!a["content"].is_null() || a.contains("tool_calls")) messages.push_back(a);
  };
  write.tool_result = [&](const json& id, std::string text) {
    messages.push_back({{"role", "tool"}, {"tool_call_id", id}, {"content", std::move(text)}});
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
