// agent/providers/factory.cc: model spec resolution and provider construction.
#include "agent/providers/factory.h"

#include <cstdlib>

#include "agent/providers/http_provider.h"
#include "agent/providers/http_stream.h"
#include "base/log.h"

namespace moat::agent::providers {

Result<ResolvedModel> resolve_model(const std::string& spec, const Config& config) {
  const size_t slash = spec.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == spec.size())
    return fail("--model " + ::moat::quoted(spec) +
                ": expected provider/model-id, e.g. anthropic/claude-sonnet-4-5");
  const std::string provider = spec.substr(0, slash);
  auto p = config.providers.find(provider);
  if (p == config.providers.end()) {
    std::string known;
    for (const auto& [name, cfg] : config.providers) known += (known.empty() ? "" : ", ") + name;
    return fail("--model " + ::moat::quoted(spec) + ": unknown provider " +
                ::moat::quoted(provider) + " (known: " + known + ")");
  }
  MOAT_ASSIGN_OR_RETURN(ModelConfig m, config.model(provider, spec.substr(slash + 1)));
  return ResolvedModel{p->second, std::move(m)};
}

Result<ProviderSettings> provider_settings(const std::string& spec, const Config& config,
                                           const std::function<const char*(const char*)>& getenv) {
  MOAT_ASSIGN_OR_RETURN(ResolvedModel r, resolve_model(spec, config));
  ProviderSettings s;
  s.name = r.provider.name;
  s.api = r.provider.kind;
  s.base_url = r.provider.base_url;
  s.model = r.model.id;
  s.legacy_max_tokens = r.provider.legacy_max_tokens;
  s.thinking_budget = r.model.thinking_budget;
  s.retry = r.provider.retry;
  s.connect_timeout = std::chrono::milliseconds(r.provider.connect_timeout_ms);
  s.idle_timeout = std::chrono::milliseconds(r.provider.idle_timeout_ms);
  for (const auto& [k, v] : r.provider.headers) s.extra_headers.push_back(k + ": " + v);
  if (!r.provider.api_key_env.empty()) {
    const char* key = getenv ? getenv(r.provider.api_key_env.c_str())
                             : std::getenv(r.provider.api_key_env.c_str());
    if (key == nullptr || *key == '\0')
      return fail("provider " + ::moat::quoted(r.provider.name) + " needs an API key: set $" +
                  r.provider.api_key_env);
    s.api_key = key;
  }
  if (!r.model.known && !r.provider.local)
    MOAT_LOG_WARN("model %s is not in the catalogue: its cost is counted as 0",
                  ::moat::quoted(spec).c_str());
  return s;
}

Result<std::unique_ptr<Provider>> make_http_provider_loaded(ProviderSettings settings) {
  // Now, while this process can still map a library (the loop drops that right before it
  // first calls the model): a missing transport is a usage error here, not a failed turn.
  MOAT_TRY(load_http_transport());
  return make_http_provider(std::move(settings));
}

Result<std::unique_ptr<Provider>> make_provider(
    const std::string& spec, const Config& config,
    const std::function<const char*(const char*)>& getenv) {
  MOAT_ASSIGN_OR_RETURN(ProviderSettings s, provider_settings(spec, config, getenv));
  return make_http_provider_loaded(std::move(s));
}

}  // namespace moat::agent::providers
