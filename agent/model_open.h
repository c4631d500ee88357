// agent/model_open.h: opening the model `--model` names, and what config.toml says of it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "agent/provider.h"
#include "agent/providers/config.h"
#include "agent/providers/http_provider.h"
#include "base/result.h"

namespace moat::agent {

// Opens "replay:FILE" or "provider/model-id" in two steps, so that `moat run` can start moatd
// between them: check_provider says every usage error (the model, config.toml, the key; a
// replay file is opened), and finish_provider loads the HTTP transport (~10 ms of shared
// libraries) while moatd builds the session.
struct CheckedProvider {
  std::unique_ptr<Provider> ready;                  // replay: already open
  std::optional<providers::ProviderSettings> http;  // an HTTP provider, its transport not loaded
};
Result<CheckedProvider> check_provider(const std::string& spec);
Result<std::unique_ptr<Provider>> finish_provider(CheckedProvider checked);

// The model's context window from the configuration (0 for replay or unknown models).
std::int64_t model_context_window(const std::string& spec);
// The model's output limit (config.toml's `max_output`, or the catalogue's); 0 for replay.
std::int64_t model_max_output(const std::string& spec);

// The configuration of the model behind `spec`; none for replay and unknown models.
std::optional<providers::ModelConfig> configured_model(const std::string& spec);

}  // namespace moat::agent
