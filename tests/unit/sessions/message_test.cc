// tests/unit/sessions/message_test.cc: a message's typed reads (sessions/message.h).
#include "sessions/message.h"

#include <gtest/gtest.h>

namespace moat::sessions {
namespace {

const Message kAssistant = nlohmann::json::parse(R"({"role":"assistant","content":[
  {"type":"text","text":"Looking."},
  {"type":"toolCall","id":"c1","name":"read","arguments":{"path":"a.txt"}},
  "not a block",
  {"type":"toolCall","id":"c2","name":"bash","arguments":{"command":"ls"}}]})");

TEST(MessageRead, TheRoleIsTheRoleMemberOrEmpty) {
  EXPECT_EQ(message_role(kAssistant), "assistant");
  EXPECT_TRUE(is_assistant(kAssistant));
  EXPECT_TRUE(is_tool_result(Message{{"role", "toolResult"}}));
  EXPECT_EQ(message_role(Message{{"role", 3}}), "");
  EXPECT_EQ(message_role(Message::array()), "");
}

TEST(MessageRead, ContentIsAnEmptyArrayWhenAbsentOrOfAnotherType) {
  EXPECT_EQ(message_content(kAssistant).size(), 4u);
  EXPECT_TRUE(message_content(Message{{"role", "user"}, {"content", "text"}}).empty());
  EXPECT_TRUE(message_content(Message(nullptr)).is_array());
}

TEST(MessageRead, ToolCallsAreAnAssistantsToolCallBlocksInOrder) {
  const auto calls = message_tool_calls(kAssistant);
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ((*calls[0])["id"], "c1");
  EXPECT_EQ((*calls[1])["name"], "bash");
  Message user = kAssistant;
  user["role"] = "user";
  EXPECT_TRUE(message_tool_calls(user).empty()) << "only an assistant calls tools";
}

}  // namespace
}  // namespace moat::sessions
