// agent/providers/factory.h: `--model provider/id` to a ready Provider.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "agent/provider.h"
#include "agent/providers/config.h"
#include "base/result.h"

namespace moat::agent::providers {

struct ResolvedModel {
  ProviderConfig provider;
  ModelConfig model;
};

// Splits "provider/model-id" at the first '/' (OpenRouter ids hold more slashes) and looks
// both up in `config`.
Result<ResolvedModel> resolve_model(const std::string& spec, const Config& config);

// Reads the key from the environment variable the provider names. The key lives only in
// the returned Provider: it is never logged, written to a session, or passed to moatd.
// `getenv` is replaceable for tests.
Result<std::unique_ptr<Provider>> make_provider(
    const std::string& spec, const Config& config,
    const std::function<const char*(const char*)>& getenv = nullptr);

}  // namespace moat::agent::providers
