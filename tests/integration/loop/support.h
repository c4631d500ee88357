// tests/integration/loop/support.h: reading what `moat run` sent to the mock model server
// and what it stored, independent of the provider's wire format.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "agent/providers/decoder.h"

namespace moat::loop_test {

// One conversation item of a request body, in the body's order.
struct WireItem {
  enum Kind { kUser, kAssistantText, kToolCall, kToolResult } kind;
  std::string id;         // tool call / result id
  std::string text;       // user text, assistant text, or the result's output
  bool is_error = false;  // tool results (anthropic's is_error; other APIs: unknown, false)
};

// The items of a request body of `api`, in order (system prompt and tools left out).
std::vector<WireItem> wire_items(agent::providers::Api api, const nlohmann::json& body);

// Whether the items are a context the provider accepts: every tool call is answered by
// exactly one result, after it and before the next assistant text or user message, and no
// result answers a call that is not there. Returns the first problem, or "".
std::string context_problem(const std::vector<WireItem>& items);

// The session files under `dir`, parsed: one vector of entries per file.
std::vector<std::vector<nlohmann::json>> session_files(const std::string& dir);

std::string read_file(const std::string& path);

}  // namespace moat::loop_test
