// agent/providers/responses_request.cc: the Responses API request body.
#include "agent/providers/json_util.h"
#include "agent/providers/request_body.h"

namespace moat::agent::providers {
namespace {

void add_user_part(const json& b, const std::string& t, json& parts) {
  if (t == "text") parts.push_back({{"type", "input_text"}, {"text", raw_field(b, "text")}});
  if (t == "image")
    parts.push_back({{"type", "input_image"},
                     {"image_url", "data:" + string_field(b, "mimeType").value_or("") + ";base64," +
                                       string_field(b, "data").value_or("")}});
}

json user_parts(const json& content) { return wire_blocks(content, "input_text", add_user_part); }

void append_assistant(const json& m, json& input) {
  const json content = raw_field(m, "content");
  if (!content.is_array()) return;
  for (const auto& b : content) {
    const std::string t = string_field(b, "type").value_or("");
    if (t == "text" && !string_field(b, "text").value_or("").empty()) {
      input.push_back({{"type", "message"},
                       {"role", "assistant"},
                       {"content", json::array({{{"type", "output_text"}, {"text", b["text"]}}})}});
    } else if (t == "toolCall") {
      const json args = raw_field(b, "arguments");
      input.push_back({{"type", "function_call"},
                       {"call_id", raw_field(b, "id")},
                       {"name", raw_field(b, "name")},
                       {"arguments", args.is_null() ? std::string("{}") : args.dump()}});
    }
    // Reasoning is not sent back: with store:false the API needs its encrypted form,
    // which we do not request.
  }
}

}  // namespace

json responses_body(const ModelRequest& request, const BodyOptions& options) {
  json input = json::array();
  RoleWriters write;
  write.user = [&](const json& m) {
    input.push_back({{"role", "user"}, {"content", user_parts(raw_field(m, "content"))}});
  };
  write.assistant = [&](const json& m) { append_assistant(m, input); };
  write.tool_result = [&](const json& id, std::string text) {
    input.push_back(
        {{"type", "function_call_output"}, {"call_id", id}, {"output", std::move(text)}});
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
