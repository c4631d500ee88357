// tests/unit/agent/cli_provider_test.cc: `moat provider parse` on the recorded captures
// prints the same message for every split seed, and reports stream errors with exit 4.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct CliRun {
  int exit_code;
  std::string out;
};

CliRun moat(const std::string& args) {
  const std::string cmd = std::string(std::getenv("MOAT_BIN")) + " " + args + " 2>/dev/null";
  FILE* f = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, f)) > 0;) out.append(buf, n);
  const int status = pclose(f);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

class ProviderParseCli : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* bin = std::getenv("MOAT_BIN");
    const char* fixtures = std::getenv("MOAT_FIXTURES");
    if (!bin || !fs::exists(bin)) GTEST_SKIP() << "MOAT_BIN is not built";
    if (!fixtures || !fs::is_directory(fixtures)) GTEST_SKIP() << "MOAT_FIXTURES is not available";
    dir_ = fixtures;
  }
  std::string fixture(const char* name) { return (dir_ / name).string(); }
  fs::path dir_;
};

TEST_F(ProviderParseCli, EverySplitSeedPrintsTheSameMessage) {
  const std::pair<const char*, const char*> cases[] = {
      {"openai-chat", "openai-chat-parallel-tools.sse"},
      {"openai-chat", "llamacpp-tool-call.sse"},
      {"anthropic", "anthropic-thinking-tool-use.sse"},
      {"anthropic", "anthropic-max-tokens-mid-tool.sse"},
      {"openai-responses", "responses-function-call.sse"},
  };
  for (const auto& [api, file] : cases) {
    SCOPED_TRACE(file);
    const CliRun whole = moat(std::string("provider parse --api ") + api + " " + fixture(file));
    ASSERT_EQ(whole.exit_code, 0);
    const json j = json::parse(whole.out);
    EXPECT_FALSE(j["toolCalls"].empty());
    for (int seed : {1, 2, 17, 1234}) {
      const CliRun split = moat(std::string("provider parse --api ") + api + " --split-seed " +
                                std::to_string(seed) + " " + fixture(file));
      EXPECT_EQ(split.out, whole.out) << "seed " << seed;
    }
  }
}

TEST_F(ProviderParseCli, PrintsParsedArgumentsStopReasonAndFourBuckets) {
  const json j = json::parse(
      moat("provider parse --api openai-chat " + fixture("openai-chat-parallel-tools.sse")).out);
  EXPECT_EQ(j["stopReason"], "toolUse");
  EXPECT_EQ(j["toolCalls"][1]["arguments"], json({{"ticker", "AAPL"}, {"exchange", "NASDAQ"}}));
  EXPECT_EQ(j["usage"], json({{"input", 149},
                              {"output", 60},
                              {"cacheRead", 0},
                              {"cacheWrite", 0},
                              {"cacheWrite1h", 0}}));
}

TEST_F(ProviderParseCli, StreamErrorExitsFourAndNamesIt) {
  const CliRun r = moat("provider parse --api openai-chat " + fixture("groq-error-event.sse"));
  EXPECT_EQ(r.exit_code, 4);
  EXPECT_EQ(json::parse(r.out)["error"]["kind"], "tool_use_failed");
  const CliRun chunks = moat("provider parse --api openai-responses --format chunks " +
                             fixture("responses-error.chunks.txt"));
  EXPECT_EQ(chunks.exit_code, 4);
  EXPECT_EQ(json::parse(chunks.out)["error"]["kind"], "insufficient_quota");
}

TEST_F(ProviderParseCli, UnknownApiIsAUsageError) {
  EXPECT_EQ(moat("provider parse --api grpc " + fixture("openai-chat-length.sse")).exit_code, 2);
}

}  // namespace
