// tools/tool.h: the vocabulary of a tool call, shared by moatd, the loop and the tools.
#pragma once

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace moat::tools {

// A command's timeout when neither its call nor a tighter policy wall time gives one.
inline constexpr double kDefaultCommandTimeoutS = 120;

// The session's effective limits on a call: the specs state them (bash's description names
// its timeout and output ceiling) and execute() enforces them, from this one value.
struct ToolLimits {
  double default_timeout_s = kDefaultCommandTimeoutS;  // when the call gives none
  // The policy's per-call wall time (0 = none): a timeout the model asks for is capped to it,
  // so an argument cannot extend a limit the policy sets (the sandbox caps it again).
  double max_timeout_s = 0;
  std::uint64_t output_ceiling = 16ull << 20;  // bytes of output before a command is killed

  // A session whose policy sets this per-call wall time (0 = none) and output ceiling: a
  // command runs at most kDefaultCommandTimeoutS unless its call asks for more, and never past
  // the wall time.
  static ToolLimits for_session(double wall_time_s, std::uint64_t output_bytes) {
    ToolLimits l;
    l.max_timeout_s = wall_time_s;
    l.default_timeout_s = std::min(wall_time_s, kDefaultCommandTimeoutS);
    l.output_ceiling = output_bytes;
    return l;
  }
};

// What the model is told about a tool: announced by moatd in `welcome`.
struct ToolSpec {
  std::string name;
  std::string description;    // generated from the limits the implementation enforces
  nlohmann::json parameters;  // JSON Schema (draft 2020-12 subset) of the arguments
  bool mutates = false;       // edit/write: serialised per canonical path by moatd
  bool sequential = false;    // a batch holding this tool runs its calls one by one

  // The `welcome` frame's entry for the tool.
  nlohmann::json to_json() const {
    return {{"name", name},
            {"description", description},
            {"parameters", parameters},
            {"mutates", mutates},
            {"sequential", sequential}};
  }
  // nullopt when the entry has no name to call the tool by; a missing field, or one of
  // another JSON type, keeps its default (moatd's frame must not make the client throw).
  static std::optional<ToolSpec> from_json(const nlohmann::json& j) {
    if (!j.is_object() || !j.contains("name") || !j["name"].is_string()) return std::nullopt;
    auto has = [&](const char* f, nlohmann::json::value_t t) {
      return j.contains(f) && j[f].type() == t;
    };
    using T = nlohmann::json::value_t;
    ToolSpec s;
    s.name = j["name"].get<std::string>();
    if (has("description", T::string)) s.description = j["description"].get<std::string>();
    s.parameters = j.contains("parameters") ? j["parameters"] : nlohmann::json::object();
    s.mutates = has("mutates", T::boolean) && j["mutates"].get<bool>();
    s.sequential = has("sequential", T::boolean) && j["sequential"].get<bool>();
    return s;
  }
};

// One block of a tool result: {"type":"text","text":...} or
// {"type":"image","mimeType":"image/png","data":<base64>}.
using ContentBlock = nlohmann::json;

struct ToolResult {
  bool is_error = false;
  std::vector<ContentBlock> content;
  nlohmann::json details = nlohmann::json::object();  // structured extras: diff, exit code...

  static ToolResult text(std::string t, bool is_error = false) {
    ToolResult r;
    r.is_error = is_error;
    r.content.push_back({{"type", "text"}, {"text", std::move(t)}});
    return r;
  }
  static ToolResult error(std::string t) { return text(std::move(t), true); }
  nlohmann::json to_json() const {
    return {{"isError", is_error}, {"content", content}, {"details", details}};
  }
  static ToolResult from_json(const nlohmann::json& j) {
    ToolResult r;
    r.is_error = j.value("isError", false);
    if (j.contains("content") && j["content"].is_array())
      for (const auto& b : j["content"]) r.content.push_back(b);
    if (j.contains("details")) r.details = j["details"];
    return r;
  }
};

}  // namespace moat::tools
