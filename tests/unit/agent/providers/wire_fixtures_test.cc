// tests/unit/agent/providers/wire_fixtures_test.cc: every recorded provider stream of
// ../shared/wire-fixtures, replayed through the real SSE parser and decoders at many split
// points, must give the expected normalised parse (wire-fixtures/README.md).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "agent/providers/decoder.h"

namespace moat::agent::providers {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::optional<fs::path> fixtures_dir() {
  const char* dir = std::getenv("MOAT_FIXTURES");
  if (dir == nullptr || !fs::is_directory(dir)) return std::nullopt;
  return fs::path(dir);
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> fixture_names() {
  std::vector<std::string> names;
  auto dir = fixtures_dir();
  if (!dir) return names;
  for (const auto& e : fs::directory_iterator(*dir)) {
    const std::string f = e.path().filename().string();
    const std::string suffix = ".expected.json";
    if (f.size() > suffix.size() && f.ends_with(suffix))
      names.push_back(f.substr(0, f.size() - suffix.size()));
  }
  std::sort(names.begin(), names.end());
  return names;
}

Api api_of(const std::string& parser) {
  if (parser == "anthropic-messages") return Api::kAnthropic;
  if (parser == "openai-responses") return Api::kOpenAiResponses;
  return Api::kOpenAiChat;
}

// The README's replay rule for vercel's one-payload-per-line format.
std::string body_from_chunks(const std::string& chunks, Api api) {
  std::string body;
  std::istringstream in(chunks);
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    if (api != Api::kOpenAiChat) {
      auto j = json::parse(line);
      body += "event: " + j["type"].get<std::string>() + "\n";
    }
    body += "data: " + line + "\n\n";
  }
  if (api == Api::kOpenAiChat) body += "data: [DONE]\n\n";
  return body;
}

struct Case {
  Api api;
  std::string body;
  json expected;
  bool from_chunks;
};

Case load_case(const std::string& name) {
  const fs::path dir = *fixtures_dir();
  json expected = json::parse(read_file(dir / (name + ".expected.json")));
  const std::string fixture = expected["fixture"];
  Case c{api_of(expected["parser"]), read_file(dir / fixture), expected,
         fixture.ends_with(".chunks.txt")};
  if (c.from_chunks) c.body = body_from_chunks(c.body, c.api);
  for (const char* k : {"fixture", "parser", "replay_note"}) c.expected.erase(k);
  return c;
}

// chunks.txt recordings lost their framing: the README gives saw_done as null and no comment
// count for them, and the [DONE] the replay adds is not one of the recorded data events.
json comparable(json actual, const Case& c) {
  if (c.from_chunks && c.api == Api::kOpenAiChat) {
    actual["saw_done"] = nullptr;
    actual.erase("sse_comment_lines");
    actual["data_events"] = actual["data_events"].get<int>() - 1;
  }
  return actual;
}

std::vector<std::vector<size_t>> split_plans(size_t size) {
  std::vector<std::vector<size_t>> plans;
  plans.push_back({});
  std::vector<size_t> every_byte;
  for (size_t i = 1; i < size; ++i) every_byte.push_back(i);
  plans.push_back(every_byte);
  if (size <= 8192) {
    for (size_t cut = 1; cut < size; ++cut) plans.push_back({cut});
  } else {
    for (size_t cut = 1; cut < size; cut += 97) plans.push_back({cut});
  }
  for (unsigned seed = 1; seed <= 64; ++seed) {
    std::mt19937 rng(seed);
    std::vector<size_t> cuts;
    for (size_t pos = 0;;) {
      pos += 1 + rng() % (seed % 2 ? 7 : 301);
      if (pos >= size) break;
      cuts.push_back(pos);
    }
    plans.push_back(cuts);
  }
  return plans;
}

class WireFixture : public testing::TestWithParam<std::string> {};

TEST_P(WireFixture, EverySplitGivesTheExpectedParse) {
  const Case c = load_case(GetParam());
  const json whole = comparable(decode_body(c.api, c.body, {}).normalized, c);
  EXPECT_EQ(whole, c.expected) << "actual:\n" << whole.dump(2);
  size_t mismatches = 0;
  for (const auto& cuts : split_plans(c.body.size())) {
    const json got = comparable(decode_body(c.api, c.body, cuts).normalized, c);
    if (got != whole && ++mismatches < 3)
      ADD_FAILURE() << "split of " << cuts.size() << " cuts, first at "
                    << (cuts.empty() ? 0 : cuts[0]) << " differs:\n"
                    << got.dump(2);
  }
  EXPECT_EQ(mismatches, 0u);
}

TEST_P(WireFixture, EverySplitGivesTheSameMessage) {
  const Case c = load_case(GetParam());
  const auto whole = decode_body(c.api, c.body, {});
  std::mt19937 rng(7);
  for (int round = 0; round < 32; ++round) {
    std::vector<size_t> cuts;
    for (size_t pos = 0;;) {
      pos += 1 + rng() % 64;
      if (pos >= c.body.size()) break;
      cuts.push_back(pos);
    }
    const auto got = decode_body(c.api, c.body, cuts);
    EXPECT_EQ(got.message, whole.message);
    EXPECT_EQ(got.failure.has_value(), whole.failure.has_value());
  }
}

INSTANTIATE_TEST_SUITE_P(Recorded, WireFixture, testing::ValuesIn(fixture_names()),
                         [](const testing::TestParamInfo<std::string>& info) {
                           std::string n = info.param;
                           for (char& ch : n)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return n;
                         });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(WireFixture);

TEST(WireFixtures, FolderIsPresent) {
  if (!fixtures_dir())
    GTEST_SKIP() << "MOAT_FIXTURES is unset or not a directory: the recorded provider "
                    "streams (../shared/wire-fixtures) are not available on this host";
  EXPECT_GE(fixture_names().size(), 20u);
}

// The assistant messages: what the loop acts on.
class WireFixtureMessage : public testing::Test {
 protected:
  void SetUp() override {
    if (!fixtures_dir()) GTEST_SKIP() << "MOAT_FIXTURES is not available";
  }
  DecodedStream decode(const std::string& name) {
    const Case c = load_case(name);
    return decode_body(c.api, c.body, {}, {"test", "m", nullptr});
  }
};

TEST_F(WireFixtureMessage, OpenAiToolCallHasParsedArgumentsAndToolUseStop) {
  const auto d = decode("openai-chat-single-tool");
  ASSERT_FALSE(d.failure);
  EXPECT_EQ(d.message["stopReason"], "toolUse");
  const json& call = d.message["content"].back();
  EXPECT_EQ(call["type"], "toolCall");
  EXPECT_EQ(call["id"], "call_ZR5UUuTt3pf61kjwAJIYdVMj");
  EXPECT_EQ(call["arguments"], json({{"country", "UK"}}));
  EXPECT_EQ(d.message["usage"], json({{"input", 53},
                                      {"output", 15},
                                      {"cacheRead", 0},
                                      {"cacheWrite", 0},
                                      {"cacheWrite1h", 0}}));
}

TEST_F(WireFixtureMessage, CachedTokensMoveFromInputToCacheRead) {
  const auto d = decode("mistral-incremental-tool-call");
  EXPECT_EQ(d.message["usage"]["input"], 171 - 128);
  EXPECT_EQ(d.message["usage"]["cacheRead"], 128);
}

TEST_F(WireFixtureMessage, LengthStopIsTruncatedNotSuccess) {
  EXPECT_EQ(decode("openai-chat-length").message["stopReason"], "length");
  EXPECT_EQ(decode("vllm-text-length").message["stopReason"], "length");
}

TEST_F(WireFixtureMessage, AnthropicToolCutByMaxTokensIsIncomplete) {
  const auto d = decode("anthropic-max-tokens-mid-tool");
  ASSERT_FALSE(d.failure);
  EXPECT_EQ(d.message["stopReason"], "length");
  const json& call = d.message["content"][1];
  EXPECT_EQ(call["type"], "toolCall");
  EXPECT_EQ(call["incomplete"], true);
  EXPECT_EQ(call["arguments"], json::object());
}

TEST_F(WireFixtureMessage, AnthropicThinkingKeepsItsSignature) {
  const auto d = decode("anthropic-thinking-tool-use");
  const json& t = d.message["content"][0];
  EXPECT_EQ(t["type"], "thinking");
  EXPECT_EQ(t["signature"].get<std::string>().size(), 636u);
}

TEST_F(WireFixtureMessage, AnthropicCacheBucketsAreSeparate) {
  EXPECT_EQ(decode("anthropic-cache-write").message["usage"], json({{"input", 4},
                                                                    {"output", 201},
                                                                    {"cacheRead", 0},
                                                                    {"cacheWrite", 1165},
                                                                    {"cacheWrite1h", 0}}));
  EXPECT_EQ(decode("anthropic-cache-read").message["usage"]["cacheRead"], 1165);
}

TEST_F(WireFixtureMessage, ToolWithoutArgumentsGetsEmptyObject) {
  const auto d = decode("anthropic-tool-no-args");
  EXPECT_EQ(d.message["content"][1]["arguments"], json::object());
  EXPECT_FALSE(d.message["content"][1].contains("incomplete"));
}

TEST_F(WireFixtureMessage, GroqErrorEventFailsTheTurnWithItsStatus) {
  const auto d = decode("groq-error-event");
  ASSERT_TRUE(d.failure);
  EXPECT_EQ(d.failure->status, 400);
  EXPECT_EQ(d.failure->kind, "tool_use_failed");
}

TEST_F(WireFixtureMessage, OpenRouterErrorInsideChunkFailsTheTurn) {
  const auto d = decode("openrouter-length-then-error");
  ASSERT_TRUE(d.failure);
  EXPECT_EQ(d.failure->message, "Token limit reached");
}

TEST_F(WireFixtureMessage, ResponsesInsufficientQuotaIsReported) {
  const auto d = decode("responses-error");
  ASSERT_TRUE(d.failure);
  EXPECT_EQ(d.failure->kind, "insufficient_quota");
}

TEST_F(WireFixtureMessage, ResponsesCallUsesCallIdAsToolCallId) {
  const auto d = decode("responses-function-call");
  ASSERT_FALSE(d.failure);
  const json& call = d.message["content"][0];
  EXPECT_EQ(call["id"], "call_4TL7SrUyTg60nSUcfgeWLFXO");
  EXPECT_EQ(call["arguments"], json({{"location", "Florence, Italy"}}));
  EXPECT_EQ(d.message["stopReason"], "toolUse");
}

TEST_F(WireFixtureMessage, TruncatedBodyIsAFailureForEveryApi) {
  for (const char* name :
       {"openai-chat-text-after-tool", "anthropic-parallel-tools", "responses-function-call"}) {
    const Case c = load_case(name);
    // Cut between two events: every event parses, but the terminal one never comes.
    const size_t at_event_end = c.body.rfind("\n\n", c.body.size() / 2) + 2;
    const auto d = decode_body(c.api, c.body.substr(0, at_event_end), {});
    ASSERT_TRUE(d.failure) << name;
    EXPECT_EQ(d.failure->kind, "incomplete_stream") << name;
    // Cut inside an event: the half event dispatched at EOF does not parse.
    const auto mid = decode_body(c.api, c.body.substr(0, at_event_end + 9), {});
    ASSERT_TRUE(mid.failure) << name;
  }
}

}  // namespace
}  // namespace moat::agent::providers
