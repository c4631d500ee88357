// tests/unit/sessions/context_test.cc: context rebuild, compaction view, dangling tool calls.
#include "sessions/context.h"

#include <gtest/gtest.h>

#include "sessions/json_util.h"
#include "temp_dir.h"

namespace moat::sessions {
namespace {

using testing::TempDir;

Message user(const std::string& t) {
  return {{"role", "user"}, {"content", {{{"type", "text"}, {"text", t}}}}};
}
Message assistant_calls(std::vector<std::pair<std::string, std::string>> calls) {
  Message m = {
      {"role", "assistant"}, {"content", nlohmann::json::array()}, {"stopReason", "toolUse"}};
  for (auto& [id, name] : calls)
    m["content"].push_back(
        {{"type", "toolCall"}, {"id", id}, {"name", name}, {"arguments", {{"path", "a.txt"}}}});
  return m;
}
Message result(const std::string& id) {
  return {{"role", "toolResult"},
          {"toolCallId", id},
          {"toolName", "read"},
          {"content", {{{"type", "text"}, {"text", "ok"}}}},
          {"isError", false}};
}
Entry msg(Message m) { return {{"type", "message"}, {"message", std::move(m)}}; }

TEST(BuildContext, MessagesInPathOrderAndOtherEntriesSkipped) {
  const std::vector<Entry> path = {
      {{"type", "model_change"}, {"provider", "replay"}, {"model", "m1"}},
      msg(user("hi")),
      {{"type", "label"}, {"targetId", "x"}, {"label", "l"}},
      {{"type", "session_info"}, {"name", "n"}},
      {{"type", "tools_change"}, {"tools", {"read"}}},
      msg(assistant_calls({{"c1", "read"}})),
      msg(result("c1")),
  };
  const SessionContext ctx = build_context(path);
  ASSERT_EQ(ctx.messages.size(), 3u);
  EXPECT_EQ(str_field(ctx.messages[0], "role"), "user");
  EXPECT_EQ(str_field(ctx.messages[2], "role"), "toolResult");
  EXPECT_EQ(ctx.model, "m1");
  EXPECT_EQ(ctx.provider, "replay");
  EXPECT_EQ(ctx.compactions, 0u);
  EXPECT_EQ(ctx.for_provider().size(), 3u);
}

TEST(BuildContext, CompactionReplacesThePastWithSummaryAndRetainedTail) {
  const std::vector<Entry> path = {
      msg(user("old 1")),
      msg(user("old 2")),
      msg(user("kept")),
      {{"type", "compaction"},
       {"summary", "S1"},
       {"retained", {user("kept")}},
       {"readFiles", {"a.txt"}},
       {"modifiedFiles", {"b.txt"}},
       {"tokensBefore", 100}},
      msg(user("after")),
  };
  const SessionContext ctx = build_context(path);
  EXPECT_EQ(ctx.summary, "S1");
  EXPECT_EQ(ctx.live_begin, 1u);
  const auto live = ctx.live_messages();
  ASSERT_EQ(live.size(), 2u);
  EXPECT_EQ(live[0], user("kept"));
  EXPECT_EQ(live[1], user("after"));
  const auto& sent = ctx.for_provider();
  ASSERT_EQ(sent.size(), 3u);
  const std::string text = str_field(sent[0]["content"][0], "text");
  EXPECT_NE(text.find("<summary>\nS1\n</summary>"), std::string::npos);
  EXPECT_NE(text.find("<read-files>\na.txt\n</read-files>"), std::string::npos);
  EXPECT_NE(text.find("<modified-files>\nb.txt\n</modified-files>"), std::string::npos);
}

TEST(BuildContext, OnlyTheNewestCompactionCounts) {
  const std::vector<Entry> path = {
      msg(user("a")),
      {{"type", "compaction"}, {"summary", "S1"}, {"retained", nlohmann::json::array()}},
      msg(user("b")),
      {{"type", "compaction"}, {"summary", "S2"}, {"retained", {user("b")}}},
  };
  const SessionContext ctx = build_context(path);
  EXPECT_EQ(ctx.summary, "S2");
  EXPECT_EQ(ctx.compactions, 2u);
  ASSERT_EQ(ctx.live_messages().size(), 1u);
  EXPECT_EQ(ctx.messages.size(), 2u);
}

TEST(BuildContext, BranchSummaryBecomesAUserMessage) {
  const std::vector<Entry> path = {
      msg(user("a")), {{"type", "branch_summary"}, {"fromId", "x"}, {"summary", "tried X"}}};
  const SessionContext ctx = build_context(path);
  ASSERT_EQ(ctx.messages.size(), 2u);
  EXPECT_NE(str_field(ctx.messages[1]["content"][0], "text").find("tried X"), std::string::npos);
}

TEST(DanglingToolCalls, ListsUnansweredCallsInCallOrder) {
  const std::vector<Entry> path = {
      msg(user("go")), msg(assistant_calls({{"c1", "read"}, {"c2", "bash"}, {"c3", "ls"}})),
      msg(result("c2"))};
  const auto dangling = dangling_tool_calls(path);
  ASSERT_EQ(dangling.size(), 2u);
  EXPECT_EQ(dangling[0].id, "c1");
  EXPECT_EQ(dangling[1].id, "c3");
  EXPECT_EQ(dangling[1].name, "ls");
  const Message answer = interrupted_result(dangling[0]);
  EXPECT_EQ(str_field(answer, "toolCallId"), "c1");
  EXPECT_TRUE(answer["isError"].get<bool>());
}

TEST(DanglingToolCalls, StoreReopenedAfterACrashMidTurnIsAnsweredThenClean) {
  TempDir dir;
  std::string path;
  {
    auto s = SessionStore::create(dir.path(), "/w");
    ASSERT_TRUE(s);
    ASSERT_TRUE((*s)->append(msg(user("go"))));
    ASSERT_TRUE((*s)->append(msg(assistant_calls({{"c1", "read"}, {"c2", "bash"}}))));
    ASSERT_TRUE((*s)->append(msg(result("c1"))));
    ASSERT_TRUE((*s)->sync());
    path = (*s)->path();
  }  // the process "dies" here, before c2's result
  auto s = SessionStore::open(path);
  ASSERT_TRUE(s) << s.error().message();
  auto dangling = dangling_tool_calls((*s)->path_to_leaf());
  ASSERT_EQ(dangling.size(), 1u);
  EXPECT_EQ(dangling[0].id, "c2");
  auto answered = answer_dangling_calls(**s);
  ASSERT_TRUE(answered.has_value());
  EXPECT_EQ(*answered, 1u);
  EXPECT_EQ(str_field((*s)->entries().back()["message"], "toolCallId"), "c2");
  EXPECT_TRUE(dangling_tool_calls(**s).empty());
  EXPECT_EQ(*answer_dangling_calls(**s), 0u);
  EXPECT_EQ(build_context(**s).messages.size(), 4u);
}

}  // namespace
}  // namespace moat::sessions
