// agent/providers/config.cc: the model catalogue and config.toml, read with policy's TOML
// reader so an error names file:line:col, the key and what is accepted, as policy errors do.
#include "agent/providers/config.h"

#include <toml++/toml.h>

#include <algorithm>
#include <limits>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "base/log.h"
#include "base/moat_dirs.h"
#include "policy/toml_reader.h"

namespace moat::agent::providers {
namespace {

ModelConfig model(const char* provider, const char* id, int64_t window, int64_t max_out,
                  Pricing p) {
  ModelConfig m;
  m.provider = provider;
  m.id = id;
  m.context_window = window;
  m.max_output = max_out;
  m.pricing = std::move(p);
  return m;
}

ProviderConfig provider(const char* name, Api kind, const char* base_url, const char* key_env,
                        bool legacy_max_tokens, bool local) {
  ProviderConfig p;
  p.name = name;
  p.kind = kind;
  p.base_url = base_url;
  p.api_key_env = key_env;
  p.legacy_max_tokens = legacy_max_tokens;
  p.local = local;
  return p;
}

// Anthropic's rule: a 5-minute cache write is 1.25x input, a 1-hour write 2x, a read 0.1x.
Pricing anthropic_prices(double in, double out) {
  return Pricing{in, out, in * 0.1, in * 1.25, std::nullopt, {}};
}

}  // namespace

// Published list prices (USD per million tokens) as of 2025; config.toml overrides them.
Config builtin_config() {
  Config c;
  auto add = [&](ProviderConfig p) { c.providers[p.name] = std::move(p); };
  add(provider("anthropic", Api::kAnthropic, "https://api.anthropic.com/v1", "ANTHROPIC_API_KEY",
               false, false));
  add(provider("openai", Api::kOpenAiResponses, "https://api.openai.com/v1", "OPENAI_API_KEY",
               false, false));
  add(provider("openai-chat", Api::kOpenAiChat, "https://api.openai.com/v1", "OPENAI_API_KEY",
               false, false));
  add(provider("openrouter", Api::kOpenAiChat, "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY",
               false, false));
  add(provider("ollama", Api::kOpenAiChat, "http://127.0.0.1:11434/v1", "", true, true));
  add(provider("vllm", Api::kOpenAiChat, "http://127.0.0.1:8000/v1", "", true, true));
  add(provider("llamacpp", Api::kOpenAiChat, "http://127.0.0.1:8080/v1", "", false, true));

  Pricing sonnet = anthropic_prices(3, 15);
  // Above 200k input tokens the whole request is billed at the long-context rates.
  PriceTier long_ctx{200000, 6, 22.5, 0.6, 7.5, std::nullopt};
  sonnet.tiers.push_back(long_ctx);
  c.models = {
      model("anthropic", "claude-sonnet-4-5", 200000, 64000, sonnet),
      model("anthropic", "claude-sonnet-4-20250514", 200000, 64000, sonnet),
      model("anthropic", "claude-opus-4-1", 200000, 32000, anthropic_prices(15, 75)),
      model("anthropic", "claude-haiku-4-5", 200000, 64000, anthropic_prices(1, 5)),
      model("anthropic", "claude-3-5-haiku-latest", 200000, 8192, anthropic_prices(0.8, 4)),
  };
  // OpenAI bills cached input at a discount and has no separate cache-write price.
  for (const char* provider : {"openai", "openai-chat"}) {
    c.models.push_back(
        model(provider, "gpt-5", 400000, 128000, {1.25, 10, 0.125, 0, std::nullopt, {}}));
    c.models.push_back(
        model(provider, "gpt-5-mini", 400000, 128000, {0.25, 2, 0.025, 0, std::nullopt, {}}));
    c.models.push_back(
        model(provider, "gpt-4.1", 1047576, 32768, {2, 8, 0.5, 0, std::nullopt, {}}));
    c.models.push_back(
        model(provider, "gpt-4o-mini", 128000, 16384, {0.15, 0.6, 0.075, 0, std::nullopt, {}}));
  }
  return c;
}

Result<ModelConfig> Config::model(std::string_view provider, std::string_view id) const {
  if (!providers.count(std::string(provider)))
    return fail("unknown provider " + ::moat::quoted(provider) + " (configure it in config.toml)");
  for (const auto& m : models)
    if (m.provider == provider && m.id == id) return m;
  ModelConfig m;
  m.provider = provider;
  m.id = id;
  m.known = false;
  return m;
}

namespace {

using policy::toml_type_name;
using policy::TomlReader;

constexpr std::int64_t kMaxInt = std::numeric_limits<std::int64_t>::max();

// t[name] read by `read` into `out` when it is there; a key left out keeps its default.
template <typename T, typename Read>
Result<void> optional(const toml::table& t, const char* name, const std::string& key, T& out,
                      Read read) {
  const toml::node* n = t.get(name);
  if (n == nullptr) return {};
  MOAT_ASSIGN_OR_RETURN(out, read(*n, key + "." + name));
  return {};
}

// A count or a duration in milliseconds: an integer from `lo`.
Result<void> read_int(TomlReader& r, const toml::table& t, const char* name, const std::string& key,
                      std::int64_t& out, std::int64_t lo = 0, std::int64_t hi = kMaxInt) {
  return optional(t, name, key, out, [&](const toml::node& n, const std::string& k) {
    return r.integer(n, k, lo, hi);
  });
}

Result<void> read_string(TomlReader& r, const toml::table& t, const char* name,
                         const std::string& key, std::string& out) {
  return optional(t, name, key, out,
                  [&](const toml::node& n, const std::string& k) { return r.string(n, k); });
}

Result<void> read_bool(TomlReader& r, const toml::table& t, const char* name,
                       const std::string& key, bool& out) {
  return optional(t, name, key, out,
                  [&](const toml::node& n, const std::string& k) { return r.boolean(n, k); });
}

// A price in USD per million tokens.
Result<void> read_price(TomlReader& r, const toml::table& t, const char* name,
                        const std::string& key, double& out) {
  return optional(t, name, key, out, [&](const toml::node& n, const std::string& k) {
    return r.number(n, k, 0, 1e9);
  });
}

// How a provider's failures are retried and when a silent connection is given up.
Result<void> read_retry_and_timeouts(TomlReader& r, const toml::table& t, ProviderConfig& p,
                                     const std::string& key) {
  std::int64_t retries = p.retry.max_retries;
  MOAT_TRY(read_int(r, t, "max_retries", key, retries, 0, 100));
  p.retry.max_retries = static_cast<int>(retries);
  struct Ms {
    const char* key;
    std::chrono::milliseconds& field;
  };
  for (Ms d : {Ms{"retry_base_ms", p.retry.base_delay}, Ms{"retry_max_ms", p.retry.max_delay},
               Ms{"retry_after_cap_ms", p.retry.max_retry_after}}) {
    std::int64_t v = d.field.count();
    MOAT_TRY(read_int(r, t, d.key, key, v));
    d.field = std::chrono::milliseconds(v);
  }
  MOAT_TRY(read_int(r, t, "connect_timeout_ms", key, p.connect_timeout_ms, 1));
  MOAT_TRY(read_int(r, t, "idle_timeout_ms", key, p.idle_timeout_ms, 1));
  return {};
}

Result<void> read_prices(TomlReader& r, const toml::table& t, PriceTier& p, const std::string& key,
                         bool with_threshold) {
  policy::Strings keys = {"input", "output", "cache_read", "cache_write", "cache_write_1h"};
  if (with_threshold) keys.insert(keys.begin(), "above_input_tokens");
  MOAT_TRY(r.check_keys(t, keys, key));
  if (with_threshold) MOAT_TRY(read_int(r, t, "above_input_tokens", key, p.above_input_tokens));
  MOAT_TRY(read_price(r, t, "input", key, p.input));
  MOAT_TRY(read_price(r, t, "output", key, p.output));
  MOAT_TRY(read_price(r, t, "cache_read", key, p.cache_read));
  MOAT_TRY(read_price(r, t, "cache_write", key, p.cache_write));
  if (t.contains("cache_write_1h")) {
    double v = 0;
    MOAT_TRY(read_price(r, t, "cache_write_1h", key, v));
    p.cache_write_1h = v;
  }
  return {};
}

Result<void> read_kind(TomlReader& r, const toml::table& t, const std::string& key, Api& out) {
  const toml::node* n = t.get("kind");
  if (n == nullptr) return {};
  MOAT_ASSIGN_OR_RETURN(const std::string kind, r.string(*n, key + ".kind"));
  auto api = parse_api(kind);
  if (!api)
    return r.error_at(n->source(), key + ".kind",
                      "expected \"openai-chat\", \"anthropic\" or \"openai-responses\", got " +
                          ::moat::quoted(kind));
  out = *api;
  return {};
}

Result<ProviderConfig> read_provider(TomlReader& r, const std::string& name, const toml::table& t,
                                     const std::string& key) {
  MOAT_TRY(r.check_keys(t,
                        {"kind", "base_url", "api_key_env", "headers", "legacy_max_tokens", "local",
                         "max_retries", "retry_base_ms", "retry_max_ms", "retry_after_cap_ms",
                         "connect_timeout_ms", "idle_timeout_ms"},
                        key));
  ProviderConfig p;
  p.name = name;
  MOAT_TRY(read_kind(r, t, key, p.kind));
  MOAT_ASSIGN_OR_RETURN(const toml::node* url, r.required(t, "base_url", key));
  MOAT_ASSIGN_OR_RETURN(p.base_url, r.string(*url, key + ".base_url"));
  while (!p.base_url.empty() && p.base_url.back() == '/') p.base_url.pop_back();
  if (p.base_url.empty())
    return r.error_at(url->source(), key + ".base_url", "expected a URL, got an empty string");
  MOAT_TRY(read_string(r, t, "api_key_env", key, p.api_key_env));
  MOAT_TRY(read_bool(r, t, "legacy_max_tokens", key, p.legacy_max_tokens));
  MOAT_TRY(read_bool(r, t, "local", key, p.local));
  MOAT_TRY(read_retry_and_timeouts(r, t, p, key));
  if (const toml::node* h = t.get("headers")) {
    MOAT_ASSIGN_OR_RETURN(const toml::table* headers, r.table(*h, key + ".headers"));
    for (const auto& [k, v] : *headers) {
      MOAT_ASSIGN_OR_RETURN(p.headers[std::string(k.str())],
                            r.string(v, key + ".headers." + std::string(k.str())));
    }
  }
  return p;
}

Result<void> read_model_prices(TomlReader& r, const toml::table& t, const std::string& key,
                               Pricing& pricing) {
  if (const toml::node* n = t.get("price")) {
    MOAT_ASSIGN_OR_RETURN(const toml::table* price, r.table(*n, key + ".price"));
    PriceTier base;
    MOAT_TRY(read_prices(r, *price, base, key + ".price", false));
    pricing = Pricing{base.input,       base.output,         base.cache_read,
                      base.cache_write, base.cache_write_1h, {}};
  }
  const toml::node* n = t.get("tiers");
  if (n == nullptr) return {};
  const toml::array* tiers = n->as_array();
  if (tiers == nullptr)
    return r.error_at(n->source(), key + ".tiers",
                      "expected an array of tables ([[models.tiers]]), got " + toml_type_name(*n));
  for (size_t i = 0; i < tiers->size(); ++i) {
    const std::string tk = key + ".tiers[" + std::to_string(i) + "]";
    MOAT_ASSIGN_OR_RETURN(const toml::table* tier, r.table((*tiers)[i], tk));
    PriceTier p;
    MOAT_TRY(read_prices(r, *tier, p, tk, true));
    pricing.tiers.push_back(p);
  }
  return {};
}

Result<ModelConfig> read_model(TomlReader& r, const toml::table& t, const std::string& key) {
  MOAT_TRY(r.check_keys(
      t, {"provider", "id", "context_window", "max_output", "price", "tiers", "thinking_budget"},
      key));
  ModelConfig m;
  MOAT_ASSIGN_OR_RETURN(const toml::node* provider, r.required(t, "provider", key));
  MOAT_ASSIGN_OR_RETURN(m.provider, r.string(*provider, key + ".provider"));
  MOAT_ASSIGN_OR_RETURN(const toml::node* id, r.required(t, "id", key));
  MOAT_ASSIGN_OR_RETURN(m.id, r.string(*id, key + ".id"));
  MOAT_TRY(read_int(r, t, "context_window", key, m.context_window, 1));
  MOAT_TRY(read_int(r, t, "max_output", key, m.max_output, 1));
  MOAT_TRY(read_int(r, t, "thinking_budget", key, m.thinking_budget));
  MOAT_TRY(read_model_prices(r, t, key, m.pricing));
  return m;
}

// "a, b, c": what a model's provider may name.
std::string provider_names(const Config& c) {
  std::string out;
  for (const auto& [name, p] : c.providers) out += (out.empty() ? "" : ", ") + name;
  return out;
}

Result<void> overlay_providers(TomlReader& r, const toml::node& node, Config& c) {
  MOAT_ASSIGN_OR_RETURN(const toml::table* ps, r.table(node, "providers"));
  for (const auto& [name, value] : *ps) {
    const std::string key = "providers." + std::string(name.str());
    MOAT_ASSIGN_OR_RETURN(const toml::table* t, r.table(value, key));
    MOAT_ASSIGN_OR_RETURN(ProviderConfig p, read_provider(r, std::string(name.str()), *t, key));
    c.providers[p.name] = std::move(p);
  }
  return {};
}

Result<void> overlay_models(TomlReader& r, const toml::node& node, Config& c) {
  const toml::array* ms = node.as_array();
  if (ms == nullptr)
    return r.error_at(node.source(), "models",
                      "expected an array of tables ([[models]]), got " + toml_type_name(node));
  for (size_t i = 0; i < ms->size(); ++i) {
    const std::string key = "models[" + std::to_string(i) + "]";
    MOAT_ASSIGN_OR_RETURN(const toml::table* t, r.table((*ms)[i], key));
    MOAT_ASSIGN_OR_RETURN(ModelConfig m, read_model(r, *t, key));
    if (!c.providers.count(m.provider))
      return r.error_at(t->get("provider")->source(), key + ".provider",
                        "unknown provider " + ::moat::quoted(m.provider) + "; expected one of " +
                            provider_names(c));
    std::erase_if(c.models,
                  [&](const ModelConfig& o) { return o.provider == m.provider && o.id == m.id; });
    c.models.push_back(std::move(m));
  }
  return {};
}

}  // namespace

Result<Config> parse_config(std::string_view text, Config base, std::string_view origin) {
  MOAT_ASSIGN_OR_RETURN(const toml::table root, policy::parse_toml_text(text, std::string(origin)));
  TomlReader r(std::string(origin), /*unknown_keys_are_errors=*/true, nullptr);
  MOAT_TRY(r.check_keys(root, {"default_model", "providers", "models"}, ""));
  if (const toml::node* d = root.get("default_model")) {
    MOAT_ASSIGN_OR_RETURN(base.default_model, r.string(*d, "default_model"));
  }
  if (const toml::node* ps = root.get("providers")) MOAT_TRY(overlay_providers(r, *ps, base));
  if (const toml::node* ms = root.get("models")) MOAT_TRY(overlay_models(r, *ms, base));
  return base;
}

Result<Config> load_config() {
  namespace fs = std::filesystem;
  const fs::path file = dirs::config_file();
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    std::error_code ec;
    if (!fs::exists(file, ec)) return builtin_config();
    return fail(Error::from_errno("open", errno, file.string()));
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_config(ss.str(), builtin_config(), file.string());
}

}  // namespace moat::agent::providers
