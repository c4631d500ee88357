// tests/unit/agent/providers/decoder_test.cc: deviations no recording covers (wire-fixtures README,
// "Known gaps"), and the retry rules.
#include <gtest/gtest.h>

#include "agent/providers/decoder.h"
#include "agent/providers/retry.h"

namespace moat::agent::providers {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

std::string events(const std::vector<json>& payloads, bool with_event_lines) {
  std::string body;
  for (const auto& p : payloads) {
    if (with_event_lines && p.contains("type"))
      body += "event: " + p["type"].get<std::string>() + "\n";
    body += "data: " + p.dump() + "\n\n";
  }
  return body;
}

TEST(AnthropicDecoder, MidStreamOverloadedErrorIsA529Failure) {
  const std::string body = events(
      {{{"type", "message_start"},
        {"message", {{"id", "m"}, {"model", "c"}, {"usage", {{"input_tokens", 5}}}}}},
       {{"type", "error"},
        {"error", {{"details", nullptr}, {"type", "overloaded_error"}, {"message", "Overloaded"}}},
        {"request_id", "req_011"}}},
      true);
  const auto d = decode_body(Api::kAnthropic, body, {});
  ASSERT_TRUE(d.failure);
  EXPECT_EQ(d.failure->status, 529);
  EXPECT_EQ(d.failure->kind, "overloaded_error");
  EXPECT_TRUE(is_retryable(d.failure->status, d.failure->kind));
  EXPECT_EQ(d.normalized["error"]["type"], "overloaded_error");
}

TEST(AnthropicDecoder, OneHourCacheWritesLandInTheirOwnBucket) {
  const std::string body = events(
      {{{"type", "message_start"},
        {"message",
         {{"id", "m"},
          {"model", "c"},
          {"usage",
           {{"input_tokens", 3},
            {"cache_creation_input_tokens", 3000},
            {"cache_read_input_tokens", 10},
            {"output_tokens", 1},
            {"cache_creation",
             {{"ephemeral_5m_input_tokens", 1000}, {"ephemeral_1h_input_tokens", 2000}}}}}}}},
       {{"type", "message_delta"},
        {"delta", {{"stop_reason", "end_turn"}}},
        {"usage", {{"output_tokens", 7}}}},
       {{"type", "message_stop"}}},
      true);
  const auto d = decode_body(Api::kAnthropic, body, {});
  ASSERT_FALSE(d.failure);
  EXPECT_EQ(d.message["usage"], json({{"input", 3},
                                      {"output", 7},
                                      {"cacheRead", 10},
                                      {"cacheWrite", 3000},
                                      {"cacheWrite1h", 2000}}));
  EXPECT_EQ(d.normalized["usage"]["ephemeral_1h_input_tokens"], 2000);
}

TEST(AnthropicDecoder, ThinkingBlocksKeepTheirSignatureAndRedactedOnesTheirData) {
  const std::string body =
      events({{{"type", "message_start"},
               {"message", {{"id", "m"}, {"model", "c"}, {"usage", {{"input_tokens", 5}}}}}},
              {{"type", "content_block_start"},
               {"index", 0},
               {"content_block", {{"type", "thinking"}, {"thinking", ""}}}},
              {{"type", "content_block_delta"},
               {"index", 0},
               {"delta", {{"type", "thinking_delta"}, {"thinking", "Let me "}}}},
              {{"type", "content_block_delta"},
               {"index", 0},
               {"delta", {{"type", "thinking_delta"}, {"thinking", "think."}}}},
              {{"type", "content_block_delta"},
               {"index", 0},
               {"delta", {{"type", "signature_delta"}, {"signature", "EqQBCgIYAhIM"}}}},
              {{"type", "content_block_stop"}, {"index", 0}},
              {{"type", "content_block_start"},
               {"index", 1},
               {"content_block", {{"type", "redacted_thinking"}, {"data", "EmwKAhgBEgy3va"}}}},
              {{"type", "content_block_stop"}, {"index", 1}},
              {{"type", "content_block_start"},
               {"index", 2},
               {"content_block", {{"type", "text"}, {"text", ""}}}},
              {{"type", "content_block_delta"},
               {"index", 2},
               {"delta", {{"type", "text_delta"}, {"text", "42"}}}},
              {{"type", "content_block_stop"}, {"index", 2}},
              {{"type", "message_delta"},
               {"delta", {{"stop_reason", "end_turn"}}},
               {"usage", {{"output_tokens", 30}}}},
              {{"type", "message_stop"}}},
             true);
  std::string reasoning;
  StreamCallbacks cb;
  cb.on_reasoning = [&](std::string_view t) { reasoning += t; };
  const auto d = decode_body(Api::kAnthropic, body, {}, DecoderContext{"p", "m", &cb});
  ASSERT_FALSE(d.failure);
  EXPECT_EQ(reasoning, "Let me think.");
  const json& c = d.message["content"];
  ASSERT_EQ(c.size(), 3u) << c.dump();
  EXPECT_EQ(
      c[0],
      json({{"type", "thinking"}, {"thinking", "Let me think."}, {"signature", "EqQBCgIYAhIM"}}));
  EXPECT_EQ(c[1]["redacted"], "EmwKAhgBEgy3va");
  EXPECT_EQ(c[2]["text"], "42");
  EXPECT_EQ(d.normalized["blocks"][1]["data"], "EmwKAhgBEgy3va");
}

json chunk(json delta, json finish = nullptr) {
  return {{"choices", json::array({{{"index", 0}, {"delta", delta}, {"finish_reason", finish}}})}};
}

TEST(OpenAiChatDecoder, CallsWithoutIndexAreKeyedById) {
  const std::string body =
      events(
          {chunk({{"tool_calls",
                   json::array({{{"id", "a"},
                                 {"function", {{"name", "read"}, {"arguments", "{\"p\":"}}}}})}}),
           chunk({{"tool_calls",
                   json::array(
                       {{{"id", "b"}, {"function", {{"name", "ls"}, {"arguments", "{}"}}}}})}}),
           chunk(
               {{"tool_calls", json::array({{{"id", "a"}, {"function", {{"arguments", "1}"}}}}})}},
               "tool_calls")},
          false) +
      "data: [DONE]\n\n";
  const auto d = decode_body(Api::kOpenAiChat, body, {});
  ASSERT_FALSE(d.failure);
  ASSERT_EQ(d.message["content"].size(), 2u);
  EXPECT_EQ(d.message["content"][0]["arguments"], json({{"p", 1}}));
  EXPECT_EQ(d.message["content"][1]["name"], "ls");
}

TEST(OpenAiChatDecoder, LengthInTheMiddleOfACallMarksItIncomplete) {
  const std::string body =
      events({chunk({{"tool_calls",
                      json::array({{{"index", 0},
                                    {"id", "a"},
                                    {"function",
                                     {{"name", "write"}, {"arguments", "{\"text\": \"abc"}}}}})}}),
              chunk(json::object(), "length")},
             false) +
      "data: [DONE]\n\n";
  const auto d = decode_body(Api::kOpenAiChat, body, {});
  ASSERT_FALSE(d.failure);
  EXPECT_EQ(d.message["stopReason"], "length");
  EXPECT_EQ(d.message["content"][0]["incomplete"], true);
  EXPECT_EQ(d.message["content"][0]["rawArguments"], "{\"text\": \"abc");
}

TEST(OpenAiChatDecoder, OllamaStyleStreamWithoutUsageCountsZero) {
  const std::string body =
      events({chunk({{"role", "assistant"}, {"content", "Hi"}}), chunk({{"content", ""}}, "stop")},
             false) +
      "data: [DONE]\n\n";
  const auto d = decode_body(Api::kOpenAiChat, body, {});
  ASSERT_FALSE(d.failure);
  EXPECT_TRUE(d.normalized["usage"].is_null());
  EXPECT_EQ(d.message["usage"]["input"], 0);
  EXPECT_EQ(d.message["content"][0]["text"], "Hi");
}

TEST(OpenAiChatDecoder, DoneWithoutFinishReasonIsIncomplete) {
  const auto d = decode_body(Api::kOpenAiChat,
                             events({chunk({{"content", "Hi"}})}, false) + "data: [DONE]\n\n", {});
  ASSERT_TRUE(d.failure);
  EXPECT_EQ(d.failure->kind, "incomplete_stream");
}

TEST(ResponsesDecoder, IncompleteForOutputLimitIsLength) {
  const std::string body = events(
      {{{"type", "response.output_text.delta"}, {"output_index", 0}, {"delta", "ab"}},
       {{"type", "response.incomplete"},
        {"response",
         {{"status", "incomplete"}, {"incomplete_details", {{"reason", "max_output_tokens"}}}}}}},
      true);
  const auto d = decode_body(Api::kOpenAiResponses, body, {});
  ASSERT_FALSE(d.failure);
  EXPECT_EQ(d.message["stopReason"], "length");
}

TEST(IsRetryable, FollowsStatusAndKind) {
  EXPECT_TRUE(is_retryable(429, "rate_limit_error"));
  EXPECT_TRUE(is_retryable(429, ""));
  EXPECT_FALSE(is_retryable(429, "insufficient_quota"));
  EXPECT_TRUE(is_retryable(500, ""));
  EXPECT_TRUE(is_retryable(503, ""));
  EXPECT_TRUE(is_retryable(529, ""));
  EXPECT_TRUE(is_retryable(200, "overloaded_error"));
  EXPECT_FALSE(is_retryable(400, "invalid_request_error"));
  EXPECT_FALSE(is_retryable(400, ""));
  EXPECT_FALSE(is_retryable(401, ""));
  EXPECT_FALSE(is_retryable(403, ""));
  EXPECT_FALSE(is_retryable(404, ""));
  EXPECT_TRUE(is_retryable(0, "connect_failed"));
  EXPECT_TRUE(is_retryable(0, "idle_timeout"));
}

TEST(RetryAfter, ReadsMillisecondsSecondsAndHttpDates) {
  EXPECT_EQ(retry_after({{"retry-after-ms", "1500"}, {"retry-after", "2"}}), 1500ms);
  EXPECT_EQ(retry_after({{"retry-after", "7"}}), 7000ms);
  EXPECT_EQ(retry_after({{"retry-after", "Wed, 21 Oct 2015 07:28:00 GMT"}}), 0ms);  // in the past
  EXPECT_FALSE(retry_after({{"retry-after", "soon"}}));
  EXPECT_FALSE(retry_after({{"retry-after", "-3"}}));
  EXPECT_FALSE(retry_after({}));
}

TEST(BackoffDelay, DoublesWithJitterWithinTheCap) {
  RetryPolicy p;
  p.base_delay = 100ms;
  p.max_delay = 1000ms;
  std::mt19937_64 rng(1);
  for (int attempt = 0; attempt < 8; ++attempt) {
    const long long step = std::min(100LL << attempt, 1000LL);
    for (int i = 0; i < 50; ++i) {
      const auto d = backoff_delay(p, attempt, rng).count();
      EXPECT_GE(d, step - step / 2);
      EXPECT_LE(d, step);
    }
  }
}

}  // namespace
}  // namespace moat::agent::providers
