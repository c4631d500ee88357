// sessions/message_dom.cc: messages read with simdjson; simdjson values made nlohmann.
#include "sessions/message_dom.h"

#include "base/check.h"
#include "sessions/json_util.h"

namespace moat::sessions {
namespace {

using nlohmann::json;
using simdjson::dom::element_type;

json object_to_json(simdjson::dom::object o) {
  json out(json::value_t::object);
  auto& members = out.get_ref<json::object_t&>();
  // insert_or_assign: of two equal keys the last wins, as in nlohmann's own parser.
  for (simdjson::dom::key_value_pair field : o)
    members.insert_or_assign(std::string(field.key), to_nlohmann(field.value));
  return out;
}

json array_to_json(simdjson::dom::array a) {
  json out(json::value_t::array);
  auto& items = out.get_ref<json::array_t&>();
  items.reserve(a.size());
  for (JsonElement v : a) items.push_back(to_nlohmann(v));
  return out;
}

}  // namespace

// Number types as nlohmann's parser chooses them: a non-negative integer is unsigned.
json to_nlohmann(JsonElement e) {
  switch (e.type()) {
    case element_type::OBJECT: return object_to_json(e.get_object().value_unsafe());
    case element_type::ARRAY: return array_to_json(e.get_array().value_unsafe());
    case element_type::STRING: return std::string(e.get_string().value_unsafe());
    case element_type::INT64: {
      const int64_t v = e.get_int64().value_unsafe();
      return v >= 0 ? json(static_cast<uint64_t>(v)) : json(v);
    }
    case element_type::UINT64: return e.get_uint64().value_unsafe();
    case element_type::DOUBLE: return e.get_double().value_unsafe();
    case element_type::BOOL: return e.get_bool().value_unsafe();
    case element_type::NULL_VALUE: break;
  }
  return nullptr;
}

namespace {

// The member, JSON null included; the last of two equal keys, as nlohmann's parser keeps it.
std::optional<JsonElement> any_member(JsonElement e, std::string_view key) {
  simdjson::dom::object object;
  if (e.get_object().get(object) != simdjson::SUCCESS) return std::nullopt;
  std::optional<JsonElement> found;
  for (simdjson::dom::key_value_pair field : object)
    if (field.key == key) found = field.value;
  return found;
}

}  // namespace

std::optional<JsonElement> member(JsonElement e, std::string_view key) {
  auto found = any_member(e, key);
  if (found && found->is_null()) return std::nullopt;
  return found;
}

std::string_view string_member(JsonElement e, std::string_view key) {
  std::string_view s;
  if (auto m = member(e, key); m && m->get_string().get(s) == simdjson::SUCCESS) return s;
  return {};
}

bool true_member(JsonElement e, std::string_view key) {
  bool b = false;
  if (auto m = member(e, key); m && m->get_bool().get(b) == simdjson::SUCCESS) return b;
  return false;
}

std::optional<simdjson::dom::array> as_array(std::optional<JsonElement> e) {
  simdjson::dom::array a;
  if (!e || e->get_array().get(a) != simdjson::SUCCESS) return std::nullopt;
  return a;
}

json json_member(JsonElement e, std::string_view key) {
  auto m = member(e, key);
  return m ? to_nlohmann(*m) : json(nullptr);
}

void MessageReader::for_each(const MessageList& messages,
                             const std::function<void(JsonElement)>& fn) {
  for (size_t i = 0; i < messages.size(); ++i) read(messages.item(i), fn);
}

void MessageReader::read(const MessageList::Item& item,
                         const std::function<void(JsonElement)>& fn) {
  JsonElement doc;
  if (item.store != nullptr) {
    // The line was validated at open or written by the store, and its padding follows it
    // (SessionStore::entry_text): parsing it again fails only for memory, which is fatal.
    const std::string_view line = item.store->entry_text(item.entry);
    MOAT_CHECK(parser_.parse(line.data(), line.size(), false).get(doc) == simdjson::SUCCESS);
    auto message = any_member(doc, "message");
    MOAT_CHECK(message.has_value());  // push_entry's contract: the entry has a message
    doc = *message;
  } else {
    scratch_ = dump_json(*item.json);
    MOAT_CHECK(parser_.parse(scratch_).get(doc) == simdjson::SUCCESS);
  }
  fn(doc);
}

std::unique_ptr<ToolCallRole> tool_call_role(JsonElement message) {
  const std::string_view role = string_member(message, "role");
  if (role == "toolResult") {
    auto r = std::make_unique<ToolCallRole>();
    r->answers = std::string(string_member(message, "toolCallId"));
    return r;
  }
  const auto content = as_array(member(message, "content"));
  if (role != "assistant" || !content) return nullptr;
  std::unique_ptr<ToolCallRole> r;
  for (JsonElement block : *content) {
    if (string_member(block, "type") != "toolCall") continue;
    if (!r) r = std::make_unique<ToolCallRole>();
    r->calls.emplace_back(string_member(block, "id"), string_member(block, "name"));
  }
  return r;
}

}  // namespace moat::sessions
