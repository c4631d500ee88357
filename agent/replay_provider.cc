// agent/replay_provider.cc: the replay provider: scripted turns, validated up front.
#include "agent/replay_provider.h"

#include <fstream>
#include <sstream>
#include <vector>

namespace moat::agent {
namespace {

using nlohmann::json;

class ReplayProvider final : public Provider {
 public:
  ReplayProvider(std::string path, std::vector<Message> turns)
      : path_(std::move(path)), turns_(std::move(turns)) {}
  std::string name() const override { return "replay"; }
  std::string model() const override { return path_; }

  Result<Message> complete(const ModelRequest&, const StreamCallbacks& stream,
                           std::stop_token cancel) override {
    if (cancel.stop_requested()) return fail(std::string("replay: cancelled"));
    if (next_ >= turns_.size())
      return fail("replay: the script " + path_ + " has no turn " + std::to_string(next_ + 1) +
                  " (it holds " + std::to_string(turns_.size()) +
                  "); the agent asked for more turns than were recorded");
    Message m = turns_[next_++];
    for (const auto& block : m["content"]) {
      if (block["type"] == "text" && stream.on_text)
        stream.on_text(block["text"].get<std::string>());
      if (block["type"] == "thinking" && stream.on_reasoning)
        stream.on_reasoning(block["thinking"].get<std::string>());
    }
    return m;
  }

 private:
  std::string path_;
  std::vector<Message> turns_;
  std::size_t next_ = 0;
};

std::string where(const std::string& path, int line, int col = 1) {
  return path + ":" + std::to_string(line) + ":" + std::to_string(col);
}

// Converts one script line into moat's assistant message, or says what is wrong.
Result<Message> turn_from_line(const json& j, const std::string& at, int turn) {
  if (!j.is_object()) return fail(at + ": a turn must be a JSON object");
  static const std::vector<std::string> kKeys = {"text", "reasoning", "tool_calls", "stop_reason",
                                                 "usage"};
  for (const auto& [key, value] : j.items()) {
    if (std::find(kKeys.begin(), kKeys.end(), key) == kKeys.end())
      return fail(at + ": unknown key '" + key +
                  "' (accepted: text, reasoning, tool_calls, stop_reason, usage)");
  }
  Message m = {{"role", "assistant"}, {"content", json::array()}, {"provider", "replay"}};
  if (j.contains("reasoning")) {
    if (!j["reasoning"].is_string()) return fail(at + ": 'reasoning' must be a string");
    m["content"].push_back({{"type", "thinking"}, {"thinking", j["reasoning"]}});
  }
  if (j.contains("text")) {
    if (!j["text"].is_string()) return fail(at + ": 'text' must be a string");
    m["content"].push_back({{"type", "text"}, {"text", j["text"]}});
  }
  int calls = 0;
  if (j.contains("tool_calls")) {
    if (!j["tool_calls"].is_array()) return fail(at + ": 'tool_calls' must be an array");
    for (const auto& c : j["tool_calls"]) {
      if (!c.is_object() || !c.contains("name") || !c["name"].is_string())
        return fail(at + ": each tool call needs a string 'name'");
      json args = c.value("arguments", json::object());
      std::string id = c.contains("id") && c["id"].is_string()
                           ? c["id"].get<std::string>()
                           : "replay_" + std::to_string(turn) + "_" + std::to_string(calls);
      m["content"].push_back(
          {{"type", "toolCall"}, {"id", id}, {"name", c["name"]}, {"arguments", args}});
      ++calls;
    }
  }
  std::string stop = calls > 0 ? "toolUse" : "stop";
  if (j.contains("stop_reason")) {
    if (!j["stop_reason"].is_string()) return fail(at + ": 'stop_reason' must be a string");
    stop = j["stop_reason"].get<std::string>();
    if (stop != "stop" && stop != "length" && stop != "toolUse")
      return fail(at + ": stop_reason '" + stop + "' is not one of stop, length, toolUse");
  }
  m["stopReason"] = stop;
  json usage = {
      {"input", 0}, {"output", 0}, {"cacheRead", 0}, {"cacheWrite", 0}, {"cacheWrite1h", 0}};
  if (j.contains("usage")) {
    if (!j["usage"].is_object()) return fail(at + ": 'usage' must be an object");
    for (const auto& [k, v] : j["usage"].items()) {
      if (!usage.contains(k) || !v.is_number_unsigned())
        return fail(at + ": usage." + k +
                    " is not accepted (input, output, cacheRead, cacheWrite, cacheWrite1h: "
                    "non-negative integers)");
      usage[k] = v;
    }
  }
  m["usage"] = usage;
  return m;
}

}  // namespace

Result<std::unique_ptr<Provider>> make_replay_provider(const std::string& path) {
  std::ifstream in(path);
  if (!in) return fail(Error::from_errno("open", errno, "replay script " + path));
  std::vector<Message> turns;
  std::string line;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    std::size_t first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;
    json j;
    try {
      j = json::parse(line);
    } catch (const json::parse_error& e) {
      // e.byte is 1-based within the line: that is the column.
      return fail(where(path, lineno, static_cast<int>(e.byte)) + ": malformed JSON: " + e.what());
    }
    MOAT_ASSIGN_OR_RETURN(
        Message m, turn_from_line(j, where(path, lineno), static_cast<int>(turns.size()) + 1));
    turns.push_back(std::move(m));
  }
  if (turns.empty()) return fail("replay script " + path + " holds no turns");
  return std::unique_ptr<Provider>(new ReplayProvider(path, std::move(turns)));
}

}  // namespace moat::agent
