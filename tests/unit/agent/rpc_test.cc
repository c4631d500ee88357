// tests/unit/agent/rpc_test.cc: `moat run --rpc`'s input: LF framing bounded per line, and
// each command checked field by field with an error that names the line.
#include "agent/rpc.h"

#include <gtest/gtest.h>

namespace moat::agent {
namespace {

TEST(RpcLines, LinesEndAtLfOnlyAndMayArriveInPieces) {
  RpcLines lines;
  EXPECT_TRUE(lines.feed("{\"type\":").empty());
  auto got = lines.feed("\"abort\"}\r\n{\"a\":\"x\\u2028y\"}\n{");
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].number, 1u);
  EXPECT_EQ(got[0].text, "{\"type\":\"abort\"}\r");
  EXPECT_EQ(got[1].number, 2u);
  auto rest = lines.finish();
  ASSERT_EQ(rest.size(), 1u);
  EXPECT_EQ(rest[0].text, "{");
  EXPECT_EQ(rest[0].number, 3u);
}

TEST(RpcLines, AnOverlongLineIsHeldOnlyUpToTheLimitAndTheNextLineIsRead) {
  RpcLines lines;
  const std::string chunk(64 * 1024, 'a');
  for (int i = 0; i < 40; ++i) {  // 2.5 MiB without an LF
    EXPECT_TRUE(lines.feed(chunk).empty());
    EXPECT_LE(lines.held(), kMaxRpcLine);
  }
  auto got = lines.feed("\n{\"type\":\"abort\"}\n");
  ASSERT_EQ(got.size(), 2u);
  EXPECT_TRUE(got[0].too_long);
  EXPECT_FALSE(got[1].too_long);
  EXPECT_EQ(got[1].text, "{\"type\":\"abort\"}");
  EXPECT_EQ(got[1].number, 2u);
}

TEST(RpcLines, ALineOfExactlyTheLimitIsTaken) {
  RpcLines lines;
  auto got = lines.feed(std::string(kMaxRpcLine, 'a') + "\n");
  ASSERT_EQ(got.size(), 1u);
  EXPECT_FALSE(got[0].too_long);
}

TEST(RpcCommand, EachCommandParsesWithItsFields) {
  auto p = parse_rpc_command(R"({"type":"prompt","id":"p1","message":"fix it"})", 4);
  ASSERT_TRUE(p) << p.error().context;
  EXPECT_EQ(p->kind, RpcKind::kPrompt);
  EXPECT_EQ(p->message, "fix it");
  EXPECT_EQ(p->id, "p1");
  EXPECT_EQ(p->line, 4u);
  auto a = parse_rpc_command(R"({"type":"answer","ask":"k","decision":"allow_session"})", 1);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->ask, "k");
  EXPECT_TRUE(a->id.is_null());
  auto r = rpc_response(*a);
  EXPECT_EQ(r["command"], "answer");
  EXPECT_EQ(r["success"], true);
  EXPECT_FALSE(r.contains("error"));
  EXPECT_TRUE(parse_rpc_command(R"({"type":"set_model","id":7,"model":"a/b"})", 1));
  EXPECT_TRUE(parse_rpc_command(R"({"type":"get_state"})", 1));
  // Optional fields: present or not.
  auto f = parse_rpc_command(R"({"type":"fork","entry":"abc"})", 1);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->kind, RpcKind::kFork);
  EXPECT_EQ(f->entry, "abc");
  EXPECT_TRUE(parse_rpc_command(R"({"type":"fork"})", 1));
  auto k = parse_rpc_command(R"({"type":"compact","instructions":"keep the plan"})", 1);
  ASSERT_TRUE(k);
  EXPECT_EQ(k->instructions, "keep the plan");
  EXPECT_TRUE(parse_rpc_command(R"({"type":"compact"})", 1));
  EXPECT_TRUE(parse_rpc_command(R"({"type":"get_tree"})", 1));
}

TEST(RpcCommand, EveryRefusalNamesTheLineAndWhatIsAccepted) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{", "line 9: not JSON"},
      {"3", "line 9: not a JSON object"},
      {R"({"id":1})",
       "line 9: no \"type\" string (accepted: prompt, steer, follow_up, abort, "
       "answer, get_state, set_model, get_tree, fork, compact)"},
      {R"({"type":"fork","entry":""})", "line 9: fork.entry is \"\": a non-empty string"},
      {R"({"type":"compact","model":"x"})",
       "line 9: unknown field \"model\" in compact (it takes type, id and instructions)"},
      {R"({"type":"stop"})", "line 9: unknown command \"stop\" (accepted: prompt,"},
      {R"({"type":"abort","message":"x"})",
       "line 9: unknown field \"message\" in abort (it takes only type and id)"},
      {R"({"type":"steer"})", "line 9: steer needs \"message\" (it takes type, id and message)"},
      {R"({"type":"steer","message":5})", "line 9: steer.message is 5: a non-empty string"},
      {R"({"type":"abort","id":1.5})", "line 9: \"id\" is 1.5: a string or an integer"},
      {R"({"type":"answer","ask":"a","decision":"yes"})",
       "line 9: answer.decision \"yes\" (accepted: allow_once, allow_session, deny)"},
  };
  for (const auto& [text, says] : cases) {
    auto c = parse_rpc_command(text, 9);
    ASSERT_FALSE(c) << text;
    EXPECT_EQ(c.error().context.rfind(says, 0), 0u) << c.error().context;
  }
  EXPECT_EQ(rpc_id_of(R"({"type":"x","id":"k"})"), "k");
  EXPECT_TRUE(rpc_id_of(R"({"id":[1]})").is_null());
}

}  // namespace
}  // namespace moat::agent
