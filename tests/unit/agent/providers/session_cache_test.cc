// tests/unit/agent/providers/session_cache_test.cc: a scripted 50-turn session against the mock
// model server: every request extends the previous one byte for byte, the mock reports a cache hit
// of the whole previous prompt on every turn after the first, and the session's cost equals a hand
// computation from the mock's numbers.
#include <gtest/gtest.h>

#include "agent/providers/http_provider.h"
#include "agent/providers/prompt.h"
#include "agent/providers/request_body.h"
#include "agent/providers/usage.h"
#include "tests/support/mock_model_server.h"

namespace moat::agent::providers {
namespace {

using moat::testing::MockModelServer;
using moat::testing::ScriptedTurn;
using nlohmann::json;

ModelRequest base_request() {
  PromptInputs in;
  in.tools = {
      {"read", "Read a file",
       json::parse(R"({"type":"object","properties":{"path":{"type":"string"}}})"), false, false},
      {"bash", "Run a command",
       json::parse(R"({"type":"object","properties":{"command":{"type":"string"}}})"), false,
       true}};
  in.workspace = "/work/repo";
  ModelRequest r;
  r.system = assemble_system_prompt(in);
  r.tools = in.tools;
  r.messages.push_back(
      {{"role", "user"},
       {"content", json::array({{{"type", "text"}, {"text", "Fix the build."}}})}});
  return r;
}

json tool_result(const std::string& id, const std::string& text) {
  return {{"role", "toolResult"},
          {"toolCallId", id},
          {"toolName", "read"},
          {"content", json::array({{{"type", "text"}, {"text", text}}})},
          {"isError", false}};
}

class SessionCache : public ::testing::TestWithParam<Api> {};

TEST_P(SessionCache, ConsecutiveRequestsShareTheWholePreviousRequestAsPrefix) {
  ModelRequest r = base_request();
  const BodyOptions opts{"m", false, true};
  auto body = [&] {
    switch (GetParam()) {
      case Api::kOpenAiChat: return openai_chat_body(r, opts);
      case Api::kAnthropic: return anthropic_body(r, opts);
      case Api::kOpenAiResponses: return responses_body(r, opts);
    }
    return json();
  };
  std::string previous = moat::testing::canonical_prompt(GetParam(), body());
  for (int turn = 0; turn < 5; ++turn) {
    const std::string id = "call_" + std::to_string(turn);
    r.messages.push_back(
        {{"role", "assistant"},
         {"content", json::array({{{"type", "text"}, {"text", "Looking."}},
                                  {{"type", "toolCall"},
                                   {"id", id},
                                   {"name", "read"},
                                   {"arguments", {{"path", "f" + std::to_string(turn)}}}}})},
         {"stopReason", "toolUse"}});
    r.messages.push_back(tool_result(id, "contents " + std::to_string(turn)));
    const std::string next = moat::testing::canonical_prompt(GetParam(), body());
    ASSERT_GT(next.size(), previous.size());
    EXPECT_EQ(next.compare(0, previous.size(), previous), 0) << "turn " << turn;
    previous = next;
  }
}

TEST_P(SessionCache, FiftyTurnsHitTheCacheEveryTurnAndCostMatchesHandComputation) {
  MockModelServer server(GetParam());
  constexpr int kTurns = 50;
  server.set_responder([](const json&, size_t n) {
    ScriptedTurn t;
    t.text = "Step " + std::to_string(n) + ": reading the next file.";
    if (n + 1 < kTurns)
      t.calls = {
          {"call_" + std::to_string(n), "read", {{"path", "src/f" + std::to_string(n) + ".cc"}}}};
    return t;
  });
  ProviderSettings s;
  s.name = "mock";
  s.api = GetParam();
  s.base_url = server.base_url();
  s.model = "mock-model";
  auto provider = make_http_provider(s);
  const Pricing pricing{3, 15, 0.3, 3.75, std::nullopt, {}};

  ModelRequest r = base_request();
  SessionTotals totals;
  std::optional<CacheState> cache;
  const auto now = std::chrono::system_clock::now();
  for (int turn = 0; turn < kTurns; ++turn) {
    auto answer = provider->complete(r, {}, {});
    ASSERT_TRUE(answer) << answer.error().message();
    const Usage u = Usage::from_message(*answer);
    EXPECT_FALSE(audit_cache(cache, "mock-model", u, pricing, now)) << "turn " << turn;
    cache = CacheState{"mock-model", u.prompt(), now};
    totals.add(u, cost_of(u, pricing));
    r.messages.push_back(*answer);
    for (const auto& b : (*answer)["content"])
      if (b["type"] == "toolCall")
        r.messages.push_back(tool_result(b["id"], std::string(400, 'x') + std::to_string(turn)));
  }
  const auto served = server.served_usage();
  ASSERT_EQ(served.size(), static_cast<size_t>(kTurns));
  double hand = 0;
  for (int i = 0; i < kTurns; ++i) {
    if (i > 0) {
      EXPECT_EQ(served[i].cached, served[i - 1].prompt) << "turn " << i;
    }
    const double uncached = static_cast<double>(served[i].prompt - served[i].cached);
    // Anthropic requests carry breakpoints, so the new part is written to the cache;
    // OpenAI bills it as plain input.
    const double new_part_price = GetParam() == Api::kAnthropic ? 3.75 : 3;
    hand += (served[i].cached * 0.3 + uncached * new_part_price + served[i].output * 15) / 1e6;
  }
  EXPECT_NEAR(totals.cost.total, hand, 1e-12);
  EXPECT_EQ(totals.answers, kTurns);
  EXPECT_GT(totals.usage.cache_read, 0);
}

INSTANTIATE_TEST_SUITE_P(
    Apis, SessionCache, ::testing::Values(Api::kOpenAiChat, Api::kAnthropic, Api::kOpenAiResponses),
    [](const ::testing::TestParamInfo<Api>& info) {
      return std::string(api_name(info.param) == "openai-chat" ? "OpenAiChat"
                         : api_name(info.param) == "anthropic" ? "Anthropic"
                                                               : "OpenAiResponses");
    });

}  // namespace
}  // namespace moat::agent::providers
