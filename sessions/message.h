// sessions/message.h: the home of a conversation's message (agent/provider.h states its shape;
// the session file, the loop, compaction and every provider share it): the type, the typed
// accessors code reads a message with instead of by key, and a message's part in tool calling.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace moat::sessions {

// A message as moat keeps it in memory and in the session file: a JSON object.
using Message = nlohmann::json;

// A message entry's part in tool calling, taken when its line is scanned (open) or written,
// so the check for calls left without a result parses nothing (issue 19).
struct ToolCallRole {
  std::vector<std::pair<std::string, std::string>> calls;  // an assistant's toolCall blocks:
                                                           // id, name ("" when not strings)
  std::optional<std::string> answers;                      // a toolResult's toolCallId
};

// Typed reads of a message. None throws: a member that is absent or of another JSON type reads
// as the empty value, as a session file written by another version may hold it.
// "user", "assistant", "toolResult"; "" when absent or not a string.
inline std::string_view message_role(const Message& m) {
  if (!m.is_object()) return {};
  auto it = m.find("role");
  return it != m.end() && it->is_string() ? std::string_view(it->get_ref<const std::string&>())
                                          : std::string_view();
}
inline bool is_assistant(const Message& m) { return message_role(m) == "assistant"; }
inline bool is_tool_result(const Message& m) { return message_role(m) == "toolResult"; }
// The message's content blocks; an empty array when it has none.
inline const nlohmann::json& message_content(const Message& m) {
  static const nlohmann::json kNone = nlohmann::json::array();
  if (!m.is_object()) return kNone;
  auto it = m.find("content");
  return it != m.end() && it->is_array() ? *it : kNone;
}
// An assistant's toolCall blocks, in order (each {"type":"toolCall","id","name","arguments"}).
inline std::vector<const nlohmann::json*> message_tool_calls(const Message& m) {
  std::vector<const nlohmann::json*> calls;
  if (!is_assistant(m)) return calls;
  for (const auto& b : message_content(m))
    if (b.is_object() && b.value("type", "") == "toolCall") calls.push_back(&b);
  return calls;
}

// Where the messages of a session's entries live, as a MessageList reads them (the session
// store implements it; sessions/store.h).
class MessageSource {
 public:
  virtual ~MessageSource() = default;
  // The `message` member of entry `index` (null if it has none), parsed once and kept.
  virtual const Message* entry_message(size_t index) const = 0;
  // Entry `index`'s line as the file holds it, followed in memory by simdjson's padding.
  virtual std::string_view entry_text(size_t index) const = 0;
  // Entry `index`'s message's tool calls or the call it answers; null when neither.
  virtual const ToolCallRole* entry_tool_calls(size_t index) const = 0;
};

}  // namespace moat::sessions
