// agent/providers/factory.h: `--model provider/id` to a ready Provider.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "agent/provider.h"
#include "agent/providers/config.h"
#include "agent/providers/http_provider.h"
#include "base/result.h"

namespace moat::agent::providers {

struct ResolvedModel {
  ProviderConfig provider;
  ModelConfig model;
};

// Splits "provider/model-id" at the first '/' (OpenRouter ids hold more slashes) and looks
// both up in `config`.
Result<ResolvedModel> resolve_model(const std::string& spec, const Config& config);

// What make_provider checks and reads (the model, the provider, its key), without loading the
// HTTP transport: `moat run` starts moatd in between, so the transport loads while moatd builds
// the session, and every usage error is still said before moatd starts.
Result<ProviderSettings> provider_settings(
    const std::string& spec, const Config& config,
    const std::function<const char*(const char*)>& getenv = nullptr);

// Loads the HTTP transport and makes the provider from provider_settings' answer.
Result<std::unique_ptr<Provider>> make_http_provider_loaded(ProviderSettings settings);

// provider_settings, then make_http_provider_loaded.
// Reads the key from the environment variable the provider names. The key lives only in
// the returned Provider: it is never logged, written to a session, or passed to moatd.
// `getenv` is replaceable for tests.
Result<std::unique_ptr<Provider>> make_provider(
    const std::string& spec, const Config& config,
    const std::function<const char*(const char*)>& getenv = nullptr);

}  // namespace moat::agent::providers
