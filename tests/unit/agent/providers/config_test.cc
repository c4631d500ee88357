// tests/unit/agent/providers/config_test.cc: config.toml, the catalogue, and --model resolution.
#include "agent/providers/config.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "agent/providers/factory.h"
#include "tests/support/mock_model_server.h"

namespace moat::agent::providers {
namespace {

constexpr const char* kToml = R"(
[providers.corp]
kind = "anthropic"
base_url = "https://llm.corp.example/v1/"
api_key_env = "CORP_KEY"
headers = { "X-Team" = "infra" }

[[models]]
provider = "corp"
id = "big"
context_window = 500000
max_output = 32000
price = { input = 2, output = 10, cache_read = 0.2, cache_write = 2.5, cache_write_1h = 4 }
tiers = [ { above_input_tokens = 200000, input = 4, output = 20, cache_read = 0.4, cache_write = 5 } ]

[[models]]
provider = "anthropic"
id = "claude-haiku-4-5"
context_window = 1000
)";

TEST(ParseConfig, ReadsProvidersModelsPricesAndTiers) {
  auto c = parse_config(kToml, builtin_config(), "test.toml");
  ASSERT_TRUE(c) << c.error().message();
  const ProviderConfig& p = c->providers.at("corp");
  EXPECT_EQ(p.kind, Api::kAnthropic);
  EXPECT_EQ(p.base_url, "https://llm.corp.example/v1");  // trailing slash dropped
  EXPECT_EQ(p.api_key_env, "CORP_KEY");
  EXPECT_EQ(p.headers.at("X-Team"), "infra");
  auto m = c->model("corp", "big");
  ASSERT_TRUE(m);
  EXPECT_TRUE(m->known);
  EXPECT_EQ(m->context_window, 500000);
  EXPECT_DOUBLE_EQ(m->pricing.cache_write_1h.value(), 4);
  ASSERT_EQ(m->pricing.tiers.size(), 1u);
  EXPECT_EQ(m->pricing.tiers[0].above_input_tokens, 200000);
  EXPECT_DOUBLE_EQ(m->pricing.tiers[0].output, 20);
}

TEST(ParseConfig, SameModelReplacesTheCatalogueEntry) {
  auto c = parse_config(kToml, builtin_config(), "test.toml");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->model("anthropic", "claude-haiku-4-5")->context_window, 1000);
  size_t n = 0;
  for (const auto& m : c->models) n += m.provider == "anthropic" && m.id == "claude-haiku-4-5";
  EXPECT_EQ(n, 1u);
}

TEST(ParseConfig, UnknownKeyIsAnErrorNamingIt) {
  auto c = parse_config(
      "[providers.x]\nkind = \"openai-chat\"\nbase_url = \"http://h\"\napi_key = \"sk\"\n",
      builtin_config(), "u.toml");
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().message().find("u.toml:4:1: providers.x.api_key: unknown key; accepted "
                                     "keys here: kind, base_url"),
            std::string::npos)
      << c.error().message();
}

// Like a policy file's: file:line:col, the key, and what would be accepted.
TEST(ParseConfig, EveryErrorNamesFileLineColumnTheKeyAndWhatIsAccepted) {
  struct Case {
    const char* text;
    const char* error;
  };
  for (const Case& c : {
           Case{"[providers.x]\nkind = \"grpc\"\nbase_url = \"http://h\"\n",
                "k.toml:2:8: providers.x.kind: expected \"openai-chat\", \"anthropic\" or "
                "\"openai-responses\", got 'grpc'"},
           Case{"[providers.x\n", "k.toml:1:13: syntax: "},
           Case{"[[models]]\nprovider = \"nope\"\nid = \"m\"\n",
                "k.toml:2:12: models[0].provider: unknown provider 'nope'; expected one of "
                "anthropic, llamacpp,"},
           Case{"[providers.x]\nkind = \"anthropic\"\n",
                "k.toml:1:1: providers.x.base_url: required key is missing"},
           Case{"[providers.x]\nbase_url = \"http://h\"\nlocal = \"yes\"\n",
                "k.toml:3:9: providers.x.local: expected true or false, got a string"},
           Case{"[[models]]\nprovider = \"openai\"\nid = \"m\"\nmax_output = 0\n",
                "k.toml:4:14: models[0].max_output: expected an integer from 1 to"},
           Case{"[[models]]\nprovider = \"openai\"\nid = \"m\"\n[models.price]\ninput = -1\n",
                "k.toml:5:9: models[0].price.input: expected a number from 0"},
           Case{"models = 3\n", "k.toml:1:10: models: expected an array of tables ([[models]])"},
           Case{"model = 3\n",
                "k.toml:1:1: model: unknown key; accepted keys here: default_model, "
                "providers, models"},
       }) {
    auto r = parse_config(c.text, builtin_config(), "k.toml");
    ASSERT_FALSE(r) << c.text;
    EXPECT_EQ(r.error().message().rfind(c.error, 0), 0u)
        << "got:  " << r.error().message() << "\nwant: " << c.error;
  }
}

TEST(LoadConfig, ReadsXdgConfigHome) {
  char tmpl[] = "/tmp/moat-config-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::filesystem::path dir(tmpl);
  std::filesystem::create_directories(dir / "moat");
  std::ofstream(dir / "moat" / "config.toml") << kToml;
  const char* old = getenv("XDG_CONFIG_HOME");
  const std::string saved = old ? old : "";
  setenv("XDG_CONFIG_HOME", tmpl, 1);
  auto c = load_config();
  if (old) setenv("XDG_CONFIG_HOME", saved.c_str(), 1);
  else unsetenv("XDG_CONFIG_HOME");
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(c) << c.error().message();
  EXPECT_TRUE(c->providers.count("corp"));
  EXPECT_TRUE(c->providers.count("anthropic"));  // the catalogue is still there
}

TEST(ResolveModel, SplitsAtTheFirstSlash) {
  auto r = resolve_model("openrouter/anthropic/claude-sonnet-4.5", builtin_config());
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->provider.name, "openrouter");
  EXPECT_EQ(r->model.id, "anthropic/claude-sonnet-4.5");
  EXPECT_FALSE(r->model.known);
  EXPECT_TRUE(resolve_model("anthropic/claude-sonnet-4-5", builtin_config())->model.known);
}

TEST(ResolveModel, RejectsMalformedSpecsAndUnknownProviders) {
  EXPECT_FALSE(resolve_model("claude", builtin_config()));
  EXPECT_FALSE(resolve_model("/x", builtin_config()));
  EXPECT_FALSE(resolve_model("anthropic/", builtin_config()));
  auto r = resolve_model("nope/x", builtin_config());
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("known: "), std::string::npos);
}

TEST(MakeProvider, MissingKeyNamesTheVariable) {
  auto p = make_provider("anthropic/claude-haiku-4-5", builtin_config(),
                         [](const char*) -> const char* { return nullptr; });
  ASSERT_FALSE(p);
  EXPECT_NE(p.error().message().find("$ANTHROPIC_API_KEY"), std::string::npos);
}

TEST(MakeProvider, ConfiguredProviderReachesTheMockServer) {
  moat::testing::MockModelServer server(Api::kAnthropic);
  server.push_turn({"configured", "", {}, false});
  auto c = parse_config(server.provider_toml("mockp"), builtin_config(), "mock.toml");
  ASSERT_TRUE(c) << c.error().message();
  auto p = make_provider("mockp/some-model", *c);
  ASSERT_TRUE(p) << p.error().message();
  ModelRequest r;
  r.messages.push_back({{"role", "user"}, {"content", "hi"}});
  auto answer = (*p)->complete(r, {}, {});
  ASSERT_TRUE(answer) << answer.error().message();
  EXPECT_EQ((*answer)["content"][0]["text"], "configured");
  EXPECT_EQ(nlohmann::json::parse(server.requests().at(0).body)["model"], "some-model");
}

TEST(MakeProvider, TheProvidersRetryPolicyAndIdleTimeoutApply) {
  moat::testing::MockModelServer server(Api::kOpenAiChat);
  server.set_stall(std::chrono::milliseconds(3000));
  server.inject(moat::testing::Fault::kStall);
  server.inject(moat::testing::Fault::kServerError, 2);
  server.push_turn({"unreached", "", {}, false});
  auto c = parse_config(server.provider_toml("mockp") +
                            "max_retries = 2\nretry_base_ms = 1\nretry_max_ms = 2\n"
                            "idle_timeout_ms = 200\n",
                        builtin_config(), "mock.toml");
  ASSERT_TRUE(c) << c.error().message();
  auto p = make_provider("mockp/m", *c);
  ASSERT_TRUE(p) << p.error().message();
  ModelRequest r;
  r.messages.push_back({{"role", "user"}, {"content", "hi"}});
  std::vector<std::string> reasons;
  StreamCallbacks cb;
  cb.on_retry = [&](int, std::chrono::milliseconds, std::string_view why) {
    reasons.emplace_back(why);
  };
  auto answer = (*p)->complete(r, cb, {});
  ASSERT_FALSE(answer) << "three attempts (max_retries = 2), all failed";
  EXPECT_EQ(server.request_count(), 3u);
  ASSERT_EQ(reasons.size(), 2u);
  EXPECT_NE(reasons[0].find("idle_timeout"), std::string::npos) << reasons[0];
  EXPECT_NE(reasons[0].find("200 ms"), std::string::npos)
      << "idle_timeout_ms applies: " << reasons[0];
  EXPECT_NE(answer.error().context.find("(after 3 attempts)"), std::string::npos)
      << answer.error().context;
}

TEST(MakeProvider, LocalProvidersNeedNoKey) {
  auto p = make_provider("ollama/qwen3:8b", builtin_config(),
                         [](const char*) -> const char* { return nullptr; });
  ASSERT_TRUE(p) << p.error().message();
  EXPECT_EQ((*p)->name(), "ollama");
  EXPECT_EQ((*p)->model(), "qwen3:8b");
}

TEST(ParseConfig, RetryPolicyTimeoutsAndThinkingBudgetAreConfigurable) {
  auto c = parse_config(R"(
[providers.fast]
kind = "anthropic"
base_url = "http://127.0.0.1:9/v1"
max_retries = 2
retry_base_ms = 10
retry_max_ms = 40
retry_after_cap_ms = 500
connect_timeout_ms = 250
idle_timeout_ms = 750

[[models]]
provider = "fast"
id = "thinker"
thinking_budget = 8000
)",
                        builtin_config(), "test.toml");
  ASSERT_TRUE(c) << c.error().message();
  const ProviderConfig& p = c->providers.at("fast");
  EXPECT_EQ(p.retry.max_retries, 2);
  EXPECT_EQ(p.retry.base_delay.count(), 10);
  EXPECT_EQ(p.retry.max_delay.count(), 40);
  EXPECT_EQ(p.retry.max_retry_after.count(), 500);
  EXPECT_EQ(p.connect_timeout_ms, 250);
  EXPECT_EQ(p.idle_timeout_ms, 750);
  EXPECT_EQ(c->model("fast", "thinker")->thinking_budget, 8000);
  // The defaults stay where a provider says nothing.
  const ProviderConfig& a = c->providers.at("anthropic");
  EXPECT_EQ(a.retry.max_retries, RetryPolicy{}.max_retries);
  EXPECT_EQ(a.idle_timeout_ms, 120000);
  EXPECT_EQ(c->model("anthropic", "claude-sonnet-4-5")->thinking_budget, 0);
}

TEST(ParseConfig, NegativeOrZeroTimeoutsAreErrorsNamingTheKey) {
  for (const char* bad : {"max_retries = -1", "retry_base_ms = -5", "idle_timeout_ms = 0",
                          "connect_timeout_ms = \"fast\""}) {
    SCOPED_TRACE(bad);
    const std::string text =
        std::string("[providers.p]\nbase_url = \"http://x/v1\"\n") + bad + "\n";
    auto c = parse_config(text, builtin_config(), "t.toml");
    ASSERT_FALSE(c);
    const std::string key = std::string(bad).substr(0, std::string(bad).find(' '));
    EXPECT_NE(c.error().message().find("t.toml:3:"), std::string::npos) << c.error().message();
    EXPECT_NE(c.error().message().find("providers.p." + key + ": expected an integer"),
              std::string::npos)
        << c.error().message();
  }
}

}  // namespace
}  // namespace moat::agent::providers
