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
  for (const auto& m : request.messages) {
    const std::string role = string_field(m, "role").value_or("");
    if (role == "user") {
      messages.push_back({{"role", "user"}, {"content", user_content(raw_field(m, "content"))}});
    } else if (role == "assistant") {
      json a = assistant_message(m);
      if (!a["content"].is_null() || a.contains("tool_calls")) messages.push_back(a);
    } else if (role == "toolResult") {
      messages.push_back({{"role", "tool"},
                          {"tool_call_id", raw_field(m, "toolCallId")},
                          {"content", joined_text(raw_field(m, "content"))}});
    }
  }
  json body = {{"model", options.model},
               {"messages", messages},
               {"stream", true},
               {"stream_options", {{"include_usage", true}}}};
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
