// agent/providers/config.h: providers and models: the built-in catalogue overlaid with
// $XDG_CONFIG_HOME/moat/config.toml.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "agent/providers/decoder.h"
#include "agent/providers/http_stream.h"
#include "agent/providers/retry.h"
#include "agent/providers/usage.h"
#include "base/result.h"

namespace moat::agent::providers {

// [providers.NAME]
struct ProviderConfig {
  std::string name;
  Api kind = Api::kOpenAiChat;  // kind = "openai-chat" | "anthropic" | "openai-responses"
  std::string base_url;         // base_url = "https://api.openai.com/v1"
  std::string api_key_env;      // api_key_env = "OPENAI_API_KEY"; "" for local servers
  std::map<std::string, std::string> headers;  // headers = { "X-Title" = "moat" }
  bool legacy_max_tokens = false;              // legacy_max_tokens = true: send max_tokens
  bool local = false;                          // local = true: unknown models are free and allowed
  RetryPolicy retry;                           // max_retries = 4, retry_base_ms = 1000,
                                               // retry_max_ms = 30000, retry_after_cap_ms = 60000
  int64_t connect_timeout_ms = kDefaultConnectTimeout.count();  // connect_timeout_ms = 10000
  // idle_timeout_ms = 120000: no byte for this long fails
  int64_t idle_timeout_ms = kDefaultIdleTimeout.count();
};

// [[models]]
struct ModelConfig {
  std::string provider;             // provider = "anthropic"
  std::string id;                   // id = "claude-sonnet-4-5"
  int64_t context_window = 128000;  // context_window = 200000
  int64_t max_output = 8192;        // max_output = 64000
  Pricing pricing;                  // [models.price] input/output/cache_read/cache_write/
                                    // cache_write_1h, [[models.tiers]] above_input_tokens + same
  bool known = true;                // false: not in any catalogue (prices unknown, shown as 0)
  int64_t thinking_budget = 0;      // thinking_budget = 8000: Anthropic extended thinking
                                    // with this many tokens (0 = off; other APIs ignore it)
};

struct Config {
  std::map<std::string, ProviderConfig> providers;
  std::vector<ModelConfig> models;
  std::string default_model;  // default_model = "anthropic/claude-sonnet-4-5": `moat run`
                              // without --model uses it ("" = --model is required)
  // The model entry for provider/id, or a default entry (known = false) when the provider
  // exists but the model is not listed.
  Result<ModelConfig> model(std::string_view provider, std::string_view id) const;
};

// The providers and models moat knows without any configuration.
Config builtin_config();
// Overlays a config.toml text on `base`: a provider of the same name is replaced, a model
// with the same provider and id is replaced. Unknown keys are errors: a typo must not be
// silently ignored. `origin` names the file in error messages.
Result<Config> parse_config(std::string_view toml_text, Config base, std::string_view origin);
// builtin_config() overlaid with $XDG_CONFIG_HOME/moat/config.toml (~/.config when unset)
// if that file exists.
Result<Config> load_config();

}  // namespace moat::agent::providers
