// tests/integration/loop/support.cc
#include "support.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

namespace moat::loop_test {

using agent::providers::Api;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

std::string text_of(const json& content) {
  if (content.is_string()) return content.get<std::string>();
  std::string out;
  if (!content.is_array()) return out;
  for (const auto& part : content)
    if (part.is_object() && part.contains("text") && part["text"].is_string())
      out += part["text"].get<std::string>();
  return out;
}

void openai_chat(const json& body, std::vector<WireItem>* out) {
  for (const auto& m : body.value("messages", json::array())) {
    const std::string role = m.value("role", "");
    if (role == "user") {
      out->push_back({WireItem::kUser, "", text_of(m["content"])});
    } else if (role == "assistant") {
      if (m.contains("content") && !m["content"].is_null())
        out->push_back({WireItem::kAssistantText, "", text_of(m["content"])});
      for (const auto& c : m.value("tool_calls", json::array()))
        out->push_back({WireItem::kToolCall, c.value("id", ""), ""});
    } else if (role == "tool") {
      out->push_back({WireItem::kToolResult, m.value("tool_call_id", ""), text_of(m["content"])});
    }
  }
}

void anthropic(const json& body, std::vector<WireItem>* out) {
  for (const auto& m : body.value("messages", json::array())) {
    const bool user = m.value("role", "") == "user";
    const json& content = m["content"];
    if (content.is_string()) {
      out->push_back({user ? WireItem::kUser : WireItem::kAssistantText, "", content});
      continue;
    }
    for (const auto& b : content) {
      const std::string type = b.value("type", "");
      if (type == "text") {
        out->push_back(
            {user ? WireItem::kUser : WireItem::kAssistantText, "", b.value("text", "")});
      } else if (type == "tool_use") {
        out->push_back({WireItem::kToolCall, b.value("id", ""), ""});
      } else if (type == "tool_result") {
        out->push_back({WireItem::kToolResult, b.value("tool_use_id", ""),
                        text_of(b.value("content", json())), b.value("is_error", false)});
      }
    }
  }
}

void responses(const json& body, std::vector<WireItem>* out) {
  for (const auto& item : body.value("input", json::array())) {
    const std::string type = item.value("type", "message");
    if (type == "function_call") {
      out->push_back({WireItem::kToolCall, item.value("call_id", ""), ""});
    } else if (type == "function_call_output") {
      out->push_back({WireItem::kToolResult, item.value("call_id", ""),
                      item["output"].is_string() ? item["output"].get<std::string>() : ""});
    } else if (item.value("role", "") == "user") {
      out->push_back({WireItem::kUser, "", text_of(item["content"])});
    } else if (item.value("role", "") == "assistant") {
      out->push_back({WireItem::kAssistantText, "", text_of(item["content"])});
    }
  }
}

}  // namespace

std::vector<WireItem> wire_items(Api api, const json& body) {
  std::vector<WireItem> out;
  switch (api) {
    case Api::kOpenAiChat: openai_chat(body, &out); break;
    case Api::kAnthropic: anthropic(body, &out); break;
    case Api::kOpenAiResponses: responses(body, &out); break;
  }
  return out;
}

std::string context_problem(const std::vector<WireItem>& items) {
  std::map<std::string, int> open;  // calls of the current batch still waiting for a result
  for (size_t i = 0; i < items.size(); ++i) {
    const WireItem& it = items[i];
    const std::string at = " (item " + std::to_string(i) + ")";
    switch (it.kind) {
      case WireItem::kToolCall:
        if (it.id.empty()) return "a tool call without an id" + at;
        if (!open.empty() && i > 0 && items[i - 1].kind == WireItem::kToolResult)
          return "call " + it.id + " comes before the previous batch is answered" + at;
        if (!open.emplace(it.id, 0).second) return "call id " + it.id + " repeats" + at;
        break;
      case WireItem::kToolResult: {
        auto f = open.find(it.id);
        if (f == open.end()) return "result " + it.id + " answers no open call" + at;
        open.erase(f);
        break;
      }
      case WireItem::kUser:
      case WireItem::kAssistantText:
        // Anthropic and chat both need the batch answered before the conversation goes on
        // (a user message may follow the results of the same batch, as steering does).
        if (!open.empty())
          return "call " + open.begin()->first + " has no result before more conversation" + at;
        break;
    }
  }
  if (!open.empty()) return "call " + open.begin()->first + " has no result";
  return "";
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::vector<json>> session_files(const std::string& dir) {
  std::vector<std::vector<json>> out;
  if (!fs::exists(dir)) return out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file() || e.path().extension() != ".jsonl") continue;
    std::vector<json> entries;
    std::istringstream lines(read_file(e.path()));
    for (std::string line; std::getline(lines, line);)
      if (!line.empty()) entries.push_back(json::parse(line));
    out.push_back(std::move(entries));
  }
  return out;
}

}  // namespace moat::loop_test
