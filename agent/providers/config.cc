// agent/providers/config.cc: the model catalogue and config.toml. The only file of
// agent/providers that sees toml++'s exceptions.
#include "agent/providers/config.h"

#include <toml++/toml.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "base/log.h"
#include "base/moat_dirs.h"

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

// Every key a table may hold; anything else is a typo and an error.
Result<void> check_keys(const toml::table& t, std::initializer_list<std::string_view> allowed,
                        const std::string& where) {
  for (const auto& [k, v] : t) {
    bool ok = false;
    for (auto a : allowed) ok |= k.str() == a;
    if (!ok) return fail(where + ": unknown key " + ::moat::quoted(k.str()));
  }
  return {};
}

template <typename T>
Result<void> read(const toml::table& t, const char* key, T& out, const std::string& where) {
  const toml::node* n = t.get(key);
  if (!n) return {};
  if constexpr (std::is_same_v<T, std::string>) {
    if (!n->is_string()) return fail(where + "." + key + ": expected a string");
    out = **n->as_string();
  } else if constexpr (std::is_same_v<T, bool>) {
    if (!n->is_boolean()) return fail(where + "." + key + ": expected true or false");
    out = **n->as_boolean();
  } else if constexpr (std::is_same_v<T, int64_t>) {
    if (!n->is_integer()) return fail(where + "." + key + ": expected an integer");
    out = **n->as_integer();
  } else {
    auto v = n->value<double>();  // integers are accepted as prices too
    if (!v) return fail(where + "." + key + ": expected a number");
    out = *v;
  }
  return {};
}

// A count or a duration in milliseconds: an integer, not negative.
Result<void> read_non_negative(const toml::table& t, const char* key, int64_t& out,
                               const std::string& where) {
  MOAT_TRY(read(t, key, out, where));
  if (out < 0) return fail(where + "." + key + ": must not be negative");
  return {};
}

// How a provider's failures are retried and when a silent connection is given up.
Result<void> read_retry_and_timeouts(const toml::table& t, ProviderConfig& p,
                                     const std::string& where) {
  int64_t retries = p.retry.max_retries;
  MOAT_TRY(read_non_negative(t, "max_retries", retries, where));
  p.retry.max_retries = static_cast<int>(std::min<int64_t>(retries, 100));
  struct Ms {
    const char* key;
    std::chrono::milliseconds& field;
  };
  for (Ms d : {Ms{"retry_base_ms", p.retry.base_delay}, Ms{"retry_max_ms", p.retry.max_delay},
               Ms{"retry_after_cap_ms", p.retry.max_retry_after}}) {
    int64_t v = d.field.count();
    MOAT_TRY(read_non_negative(t, d.key, v, where));
    d.field = std::chrono::milliseconds(v);
  }
  MOAT_TRY(read_non_negative(t, "connect_timeout_ms", p.connect_timeout_ms, where));
  MOAT_TRY(read_non_negative(t, "idle_timeout_ms", p.idle_timeout_ms, where));
  if (p.connect_timeout_ms == 0 || p.idle_timeout_ms == 0)
    return fail(where + ": connect_timeout_ms and idle_timeout_ms must be positive");
  return {};
}

Result<void> read_prices(const toml::table& t, PriceTier& p, const std::string& where,
                         bool with_threshold) {
  if (with_threshold) {
    MOAT_TRY(check_keys(
        t, {"above_input_tokens", "input", "output", "cache_read", "cache_write", "cache_write_1h"},
        where));
    MOAT_TRY(read(t, "above_input_tokens", p.above_input_tokens, where));
  } else {
    MOAT_TRY(
        check_keys(t, {"input", "output", "cache_read", "cache_write", "cache_write_1h"}, where));
  }
  MOAT_TRY(read(t, "input", p.input, where));
  MOAT_TRY(read(t, "output", p.output, where));
  MOAT_TRY(read(t, "cache_read", p.cache_read, where));
  MOAT_TRY(read(t, "cache_write", p.cache_write, where));
  if (t.contains("cache_write_1h")) {
    double v = 0;
    MOAT_TRY(read(t, "cache_write_1h", v, where));
    p.cache_write_1h = v;
  }
  return {};
}

Result<ProviderConfig> read_provider(const std::string& name, const toml::table& t,
                                     const std::string& where) {
  MOAT_TRY(check_keys(t,
                      {"kind", "base_url", "api_key_env", "headers", "legacy_max_tokens", "local",
                       "max_retries", "retry_base_ms", "retry_max_ms", "retry_after_cap_ms",
                       "connect_timeout_ms", "idle_timeout_ms"},
                      where));
  ProviderConfig p;
  p.name = name;
  std::string kind = "openai-chat";
  MOAT_TRY(read(t, "kind", kind, where));
  MOAT_ASSIGN_OR_RETURN(p.kind, parse_api(kind));
  MOAT_TRY(read(t, "base_url", p.base_url, where));
  if (p.base_url.empty()) return fail(where + ": base_url is required");
  while (!p.base_url.empty() && p.base_url.back() == '/') p.base_url.pop_back();
  MOAT_TRY(read(t, "api_key_env", p.api_key_env, where));
  MOAT_TRY(read(t, "legacy_max_tokens", p.legacy_max_tokens, where));
  MOAT_TRY(read(t, "local", p.local, where));
  MOAT_TRY(read_retry_and_timeouts(t, p, where));
  if (const toml::table* h = t["headers"].as_table()) {
    for (const auto& [k, v] : *h) {
      if (!v.is_string())
        return fail(where + ".headers." + std::string(k.str()) + ": expected a string");
      p.headers[std::string(k.str())] = **v.as_string();
    }
  }
  return p;
}

Result<ModelConfig> read_model(const toml::table& t, const std::string& where) {
  MOAT_TRY(check_keys(
      t, {"provider", "id", "context_window", "max_output", "price", "tiers", "thinking_budget"},
      where));
  ModelConfig m;
  MOAT_TRY(read(t, "provider", m.provider, where));
  MOAT_TRY(read(t, "id", m.id, where));
  if (m.provider.empty() || m.id.empty()) return fail(where + ": provider and id are required");
  MOAT_TRY(read(t, "context_window", m.context_window, where));
  MOAT_TRY(read(t, "max_output", m.max_output, where));
  MOAT_TRY(read_non_negative(t, "thinking_budget", m.thinking_budget, where));
  if (const toml::table* price = t["price"].as_table()) {
    PriceTier base;
    MOAT_TRY(read_prices(*price, base, where + ".price", false));
    m.pricing = Pricing{base.input,       base.output,         base.cache_read,
                        base.cache_write, base.cache_write_1h, {}};
  }
  if (const toml::array* tiers = t["tiers"].as_array()) {
    for (size_t i = 0; i < tiers->size(); ++i) {
      const toml::table* tier = (*tiers)[i].as_table();
      const std::string tw = where + ".tiers[" + std::to_string(i) + "]";
      if (!tier) return fail(tw + ": expected a table");
      PriceTier p;
      MOAT_TRY(read_prices(*tier, p, tw, true));
      m.pricing.tiers.push_back(p);
    }
  }
  return m;
}

Result<Config> overlay(const toml::table& root, Config c, const std::string& origin) {
  MOAT_TRY(check_keys(root, {"providers", "models"}, origin));
  if (const toml::table* ps = root["providers"].as_table()) {
    for (const auto& [name, node] : *ps) {
      const std::string where = origin + ": providers." + std::string(name.str());
      const toml::table* t = node.as_table();
      if (!t) return fail(where + ": expected a table");
      MOAT_ASSIGN_OR_RETURN(ProviderConfig p, read_provider(std::string(name.str()), *t, where));
      c.providers[p.name] = std::move(p);
    }
  }
  if (const toml::array* ms = root["models"].as_array()) {
    for (size_t i = 0; i < ms->size(); ++i) {
      const std::string where = origin + ": models[" + std::to_string(i) + "]";
      const toml::table* t = (*ms)[i].as_table();
      if (!t) return fail(where + ": expected a table");
      MOAT_ASSIGN_OR_RETURN(ModelConfig m, read_model(*t, where));
      if (!c.providers.count(m.provider))
        return fail(where + ": unknown provider " + ::moat::quoted(m.provider));
      std::erase_if(c.models,
                    [&](const ModelConfig& o) { return o.provider == m.provider && o.id == m.id; });
      c.models.push_back(std::move(m));
    }
  }
  return c;
}

}  // namespace

Result<Config> parse_config(std::string_view text, Config base, std::string_view origin) {
  toml::table root;
  try {
    root = toml::parse(text, origin);
  } catch (const toml::parse_error& e) {
    std::ostringstream where;
    where << e.source().begin;
    return fail(std::string(origin) + ":" + where.str() + ": " + std::string(e.description()));
  }
  return overlay(root, std::move(base), std::string(origin));
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
