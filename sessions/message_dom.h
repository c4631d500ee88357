// sessions/message_dom.h: a MessageList's messages read with simdjson, for the code that
// turns them into a provider's request body without building nlohmann objects (issue 19).
#pragma once

#include <nlohmann/json.hpp>
#include <simdjson.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "sessions/message_list.h"
#include "sessions/message.h"

namespace moat::sessions {

using JsonElement = simdjson::dom::element;

// Each message of a list as a simdjson element, in order. A store's message is parsed from
// its entry line's bytes: no nlohmann object is made, so the 100,000 messages of a resumed
// session cost one parse each, not an allocation per value. A message held as
// nlohmann::json is first serialized as the session file holds it (invalid UTF-8
// replaced), so a message reads the same before and after a resume.
class MessageReader {
 public:
  // fn(message) for each message; the element is valid only during that call.
  void for_each(const MessageList& messages, const std::function<void(JsonElement)>& fn);
  // The same for one message.
  void read(const MessageList::Item& item, const std::function<void(JsonElement)>& fn);

 private:
  simdjson::dom::parser parser_;
  std::string scratch_;
};

// The message's tool calls (an assistant's toolCall blocks) or the call it answers (a
// toolResult); null when neither.
std::unique_ptr<ToolCallRole> tool_call_role(JsonElement message);

// Non-throwing accessors, meaning what agent/providers/json_util.h's do for nlohmann:
// member `key` of an object; nullopt when absent, JSON null, or `e` is not an object.
std::optional<JsonElement> member(JsonElement e, std::string_view key);
// The member as a string; "" when it is not one.
std::string_view string_member(JsonElement e, std::string_view key);
// True when the member is the boolean true.
bool true_member(JsonElement e, std::string_view key);
// The element as an array; nullopt when absent or not an array. (A named array: a loop over
// a temporary simdjson_result's value would outlive it.)
std::optional<simdjson::dom::array> as_array(std::optional<JsonElement> e);
// The member as nlohmann::json (the value as sent), JSON null when absent.
nlohmann::json json_member(JsonElement e, std::string_view key);
// The value as nlohmann::json, equal to what nlohmann's own parser makes of the same text.
nlohmann::json to_nlohmann(JsonElement e);

}  // namespace moat::sessions
