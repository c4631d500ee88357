// tests/unit/agent/providers/request_body_test.cc: our request bodies have the shape the providers'
// recorded requests have (wire-fixtures *.request.json).
#include "agent/providers/request_body.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "sessions/context.h"
#include "sessions/json_util.h"
#include "sessions/store.h"
#include "tests/unit/sessions/temp_dir.h"

namespace moat::agent::providers {
namespace {

using nlohmann::json;

std::optional<json> recorded(const char* name) {
  const char* dir = std::getenv("MOAT_FIXTURES");
  if (!dir) return std::nullopt;
  std::ifstream in(std::filesystem::path(dir) / name);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  return json::parse(ss.str())["body"];
}

json text(const std::string& t) { return json::array({{{"type", "text"}, {"text", t}}}); }

TEST(RequestBody, OpenAiChatToolRoundTripMatchesTheRecording) {
  auto rec = recorded("openai-chat-text-after-tool.request.json");
  if (!rec) GTEST_SKIP() << "MOAT_FIXTURES is not available";
  ModelRequest r;
  r.messages = {{{"role", "user"},
                 {"content", text("What is the capital of the UK? Use the tool, then answer.")}},
                {{"role", "assistant"},
                 {"content", json::array({{{"type", "toolCall"},
                                           {"id", "call_ZR5UUuTt3pf61kjwAJIYdVMj"},
                                           {"name", "get_capital"},
                                           {"arguments", {{"country", "UK"}}}}})}},
                {{"role", "toolResult"},
                 {"toolCallId", "call_ZR5UUuTt3pf61kjwAJIYdVMj"},
                 {"toolName", "get_capital"},
                 {"content", text("London")},
                 {"isError", false}}};
  const json body = openai_chat_body(r, {"gpt-4o-mini", false, true});
  EXPECT_EQ(body["messages"], (*rec)["messages"]);
  EXPECT_EQ(body["stream_options"], (*rec)["stream_options"]);
}

TEST(RequestBody, AnthropicToolResultsShareOneUserMessageLikeTheRecording) {
  auto rec = recorded("anthropic-parallel-tools.turn2.request.json");
  if (!rec) GTEST_SKIP() << "MOAT_FIXTURES is not available";
  ModelRequest r;
  r.system = "You are a helpful assistant. Always use both add and multiply at the same time.";
  r.messages = {
      {{"role", "user"}, {"content", text("Add and multiply the number 2 and 3")}},
      {{"role", "assistant"},
       {"content", json::array({{{"type", "text"},
                                 {"text", "I'll add and multiply the numbers 2 and 3 for you."}},
                                {{"type", "toolCall"},
                                 {"id", "toolu_01UYxUYC2zRPY8wiutnF48eP"},
                                 {"name", "add"},
                                 {"arguments", {{"a", 2}, {"b", 3}}}},
                                {{"type", "toolCall"},
                                 {"id", "toolu_01VaRx1jpWCvPhi7L4kywAcd"},
                                 {"name", "multiply"},
                                 {"arguments", {{"a", 2}, {"b", 3}}}}})}},
      {{"role", "toolResult"},
       {"toolCallId", "toolu_01UYxUYC2zRPY8wiutnF48eP"},
       {"content", text("5")},
       {"isError", false}},
      {{"role", "toolResult"},
       {"toolCallId", "toolu_01VaRx1jpWCvPhi7L4kywAcd"},
       {"content", text("6")},
       {"isError", false}}};
  const json no_cache = anthropic_body(r, {"claude-sonnet-4-20250514", false, false});
  EXPECT_EQ(no_cache["messages"], (*rec)["messages"]);
  EXPECT_EQ(no_cache["system"], (*rec)["system"]);
  // With breakpoints: the system block and the last block of the last message carry them.
  const json cached = anthropic_body(r, {"claude-sonnet-4-20250514", false, true});
  EXPECT_EQ(cached["system"][0]["cache_control"], json({{"type", "ephemeral"}}));
  EXPECT_EQ(cached["messages"][2]["content"][1]["cache_control"], json({{"type", "ephemeral"}}));
  EXPECT_FALSE(cached["messages"][2]["content"][0].contains("cache_control"));
}

TEST(RequestBody, ResponsesInputMatchesTheRecordingsItemShapes) {
  auto rec = recorded("responses-function-call.request.json");
  if (!rec) GTEST_SKIP() << "MOAT_FIXTURES is not available";
  ModelRequest r;
  r.system = "You are a helpful assistant";
  r.max_output_tokens = 4000;
  r.messages = {{{"role", "user"}, {"content", text("What's the weather in Florence,Italy?")}}};
  const json body = responses_body(r, {"gpt-4o-mini", false, true});
  EXPECT_EQ(body["input"][0], (*rec)["input"][1]);  // the user item; we send system as instructions
  EXPECT_EQ(body["max_output_tokens"], (*rec)["max_output_tokens"]);
  EXPECT_EQ(body["store"], (*rec)["store"]);
}

TEST(RequestBody, ResponsesSendsCallsAndOutputsByCallId) {
  ModelRequest r;
  r.messages = {{{"role", "assistant"},
                 {"content", json::array({{{"type", "toolCall"},
                                           {"id", "call_1"},
                                           {"name", "read"},
                                           {"arguments", {{"path", "a"}}}}})}},
                {{"role", "toolResult"},
                 {"toolCallId", "call_1"},
                 {"content", text("data")},
                 {"isError", false}}};
  const json body = responses_body(r, {"m", false, true});
  EXPECT_EQ(body["input"][0], json({{"type", "function_call"},
                                    {"call_id", "call_1"},
                                    {"name", "read"},
                                    {"arguments", "{\"path\":\"a\"}"}}));
  EXPECT_EQ(body["input"][1],
            json({{"type", "function_call_output"}, {"call_id", "call_1"}, {"output", "data"}}));
}

// A tool result with an image (the read tool's, an MCP server's): the Responses API takes it
// as an input_image part of the call's output, Anthropic as an image block of the tool_result;
// Chat Completions' tool message takes text only, so the model reads a line naming the image.
TEST(RequestBody, AToolResultsImageReachesEachApiThatTakesOneAndIsNamedWhereNot) {
  const json image = {{"type", "image"}, {"mimeType", "image/png"}, {"data", "iVBORw0KGgo="}};
  ModelRequest r;
  r.messages = {{{"role", "assistant"},
                 {"content", json::array({{{"type", "toolCall"},
                                           {"id", "call_1"},
                                           {"name", "mcp__t__image"},
                                           {"arguments", json::object()}}})}},
                {{"role", "toolResult"},
                 {"toolCallId", "call_1"},
                 {"content", json::array({{{"type", "text"}, {"text", "a chart"}}, image})},
                 {"isError", false}}};
  const json responses = responses_body(r, {"m", false, true});
  EXPECT_EQ(responses["input"][1]["output"],
            json::array({{{"type", "input_text"}, {"text", "a chart"}},
                         {{"type", "input_image"},
                          {"image_url", "data:image/png;base64,iVBORw0KGgo="}}}));
  const json anthropic = anthropic_body(r, {"m", false, false});
  EXPECT_EQ(anthropic["messages"][1]["content"][0]["content"][1],
            json({{"type", "image"},
                  {"source",
                   {{"type", "base64"}, {"media_type", "image/png"}, {"data", "iVBORw0KGgo="}}}}));
  const json chat = openai_chat_body(r, {"m", false, true});
  EXPECT_EQ(chat["messages"][1]["content"],
            "a chart\n[image image/png, 8 bytes, returned by the tool: this API takes no image "
            "in a tool result]");
}

TEST(RequestBody, AnthropicThinkingBudgetEnablesThinkingOnTopOfTheOutputAllowance) {
  ModelRequest r;
  r.max_output_tokens = 4096;
  r.messages = {{{"role", "user"}, {"content", text("hi")}}};
  const json off = anthropic_body(r, {"claude", false, false});
  EXPECT_FALSE(off.contains("thinking"));
  EXPECT_EQ(off["max_tokens"], 4096);
  const json on = anthropic_body(r, {"claude", false, false, 10000});
  EXPECT_EQ(on["thinking"], json({{"type", "enabled"}, {"budget_tokens", 10000}}));
  EXPECT_EQ(on["max_tokens"], 14096) << "budget_tokens must stay below max_tokens";
}

TEST(RequestBody, AnthropicThinkingGoesBackSignedOrRedactedAndUnsignedIsDropped) {
  ModelRequest r;
  r.messages = {
      {{"role", "user"}, {"content", text("q")}},
      {{"role", "assistant"},
       {"content", json::array({{{"type", "thinking"}, {"thinking", "plan"}, {"signature", "sig1"}},
                                {{"type", "thinking"}, {"thinking", ""}, {"redacted", "enc"}},
                                {{"type", "thinking"}, {"thinking", "unsigned"}, {"signature", ""}},
                                {{"type", "toolCall"},
                                 {"id", "t1"},
                                 {"name", "read"},
                                 {"arguments", {{"path", "a"}}}}})}},
      {{"role", "toolResult"},
       {"toolCallId", "t1"},
       {"toolName", "read"},
       {"content", text("A")},
       {"isError", false}}};
  const json body = anthropic_body(r, {"claude", false, false, 2048});
  const json& blocks = body["messages"][1]["content"];
  ASSERT_EQ(blocks.size(), 3u) << blocks.dump();
  EXPECT_EQ(blocks[0], json({{"type", "thinking"}, {"thinking", "plan"}, {"signature", "sig1"}}));
  EXPECT_EQ(blocks[1], json({{"type", "redacted_thinking"}, {"data", "enc"}}));
  EXPECT_EQ(blocks[2]["type"], "tool_use");
}

TEST(RequestBody, AnthropicUserTextAfterToolResultsJoinsTheirMessage) {
  ModelRequest r;
  r.messages = {{{"role", "user"}, {"content", text("q")}},
                {{"role", "assistant"},
                 {"content", json::array({{{"type", "toolCall"},
                                           {"id", "t1"},
                                           {"name", "read"},
                                           {"arguments", json::object()}}})}},
                {{"role", "toolResult"},
                 {"toolCallId", "t1"},
                 {"toolName", "read"},
                 {"content", text("A")},
                 {"isError", false}},
                {{"role", "user"}, {"content", text("also look at b")}}};
  const json body = anthropic_body(r, {"claude", false, false});
  ASSERT_EQ(body["messages"].size(), 3u) << "roles alternate: " << body["messages"].dump();
  const json& last = body["messages"][2]["content"];
  ASSERT_EQ(last.size(), 2u);
  EXPECT_EQ(last[0]["type"], "tool_result") << "tool results come first";
  EXPECT_EQ(last[1], json({{"type", "text"}, {"text", "also look at b"}}));
}

// Every kind of message and block a body renders, with the values whose bytes could differ
// between a JSON object and its text: escapes, non-ASCII, invalid UTF-8, numbers of each
// kind, nested arguments, null and missing members, an unknown role.
std::vector<json> every_kind_of_message() {
  const json image = {{"type", "image"}, {"mimeType", "image/png"}, {"data", "iVBORw0KGgo="}};
  return {
      {{"role", "user"}, {"content", "a plain string \"quoted\" \\ / \n\t\x01 \u00e9\u2713"}},
      {{"role", "user"}, {"content", json::array({{{"type", "text"}, {"text", "look"}}, image})}},
      {{"role", "assistant"},
       {"content",
        json::array({{{"type", "text"}, {"text", "bad \xff byte"}},
                     {{"type", "thinking"}, {"thinking", "plan"}, {"signature", "sig1"}},
                     {{"type", "thinking"}, {"thinking", ""}, {"redacted", "enc"}},
                     {{"type", "thinking"}, {"thinking", "unsigned"}, {"signature", ""}},
                     {{"type", "toolCall"},
                      {"id", "t1"},
                      {"name", "edit"},
                      {"arguments",
                       {{"path", "src/\u00e9.cc"},
                        {"n", -3},
                        {"big", 18446744073709551615ull},
                        {"ratio", 0.1},
                        {"exp", 1e300},
                        {"nested", {{"list", {1, "two", nullptr, true, json::object()}}}}}}},
                     {{"type", "toolCall"}, {"id", "t2"}, {"name", "ls"}}})},
       {"stopReason", "toolUse"},
       {"usage", {{"input", 10}, {"output", 2}}}},
      {{"role", "toolResult"},
       {"toolCallId", "t1"},
       {"toolName", "edit"},
       {"content", json::array({{{"type", "text"}, {"text", "done"}}, image})},
       {"isError", true}},
      {{"role", "toolResult"}, {"toolCallId", "t2"}, {"toolName", "ls"}, {"content", "a\nb"}},
      {{"role", "user"}, {"content", json::array({{{"type", "text"}, {"text", "steer"}}})}},
      {{"role", "assistant"}, {"content", nullptr}},
      {{"role", "system?"}, {"content", "not sent"}},
      {{"role", "assistant"}, {"content", json::array({{{"type", "text"}, {"text", "end"}}})}},
  };
}

// Messages of a session are rendered from the bytes of its file (sessions/message_dom.h),
// never built as JSON objects on a resume; the live session rendered them from its JSON
// objects. The provider's prompt cache needs the same bytes either way, for every wire
// format: live, appended to a store, and reopened from its file.
TEST(RequestBody, AResumedSessionRendersTheBytesTheLiveSessionSentForEveryWireFormat) {
  sessions::testing::TempDir dir;
  const std::vector<json> messages = every_kind_of_message();
  auto store = sessions::SessionStore::create(dir.path(), "/w");
  ASSERT_TRUE(store.has_value()) << store.error().message();
  for (const json& m : messages)
    ASSERT_TRUE((*store)->append({{"type", "message"}, {"message", m}}).has_value());
  ASSERT_TRUE((*store)->sync().has_value());
  auto reopened = sessions::SessionStore::open_read_only((*store)->path());
  ASSERT_TRUE(reopened.has_value()) << reopened.error().message();

  ModelRequest live{"system", {}, messages, 1000};
  ModelRequest appended = live, resumed = live;
  appended.messages = sessions::build_context(**store).for_provider();
  resumed.messages = sessions::build_context(**reopened).for_provider();
  ASSERT_EQ(resumed.messages.size(), messages.size());
  ASSERT_NE(resumed.messages.item(0).store, nullptr) << "a resumed message is the file's bytes";
  const BodyOptions options{"m", false, true, 1024};
  for (auto body : {openai_chat_body, anthropic_body, responses_body}) {
    const std::string want = sessions::dump_json(body(live, options));
    EXPECT_EQ(sessions::dump_json(body(appended, options)), want);
    EXPECT_EQ(sessions::dump_json(body(resumed, options)), want);
    EXPECT_NE(want.find("\u00e9"), std::string::npos) << want;  // the text went through
  }
  // Reading a resumed message as JSON (compaction, tests) still gives the same object.
  EXPECT_EQ(resumed.messages[2]["content"][4]["arguments"]["ratio"], 0.1);
  EXPECT_EQ(resumed.messages.to_vector()[5], messages[5]);
}

}  // namespace
}  // namespace moat::agent::providers
