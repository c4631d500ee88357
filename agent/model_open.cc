// agent/model_open.cc: opening the model and reading its configuration (model_open.h).
#include "agent/model_open.h"

#include "agent/providers/factory.h"
#include "agent/replay_provider.h"

namespace moat::agent {

std::optional<providers::ModelConfig> configured_model(const std::string& spec) {
  if (spec.rfind("replay:", 0) == 0) return std::nullopt;
  auto cfg = providers::load_config();
  if (!cfg) return std::nullopt;
  auto m = providers::resolve_model(spec, *cfg);
  if (!m) return std::nullopt;
  return m->model;
}

Result<CheckedProvider> check_provider(const std::string& spec) {
  CheckedProvider c;
  if (spec.rfind("replay:", 0) == 0) {
    MOAT_ASSIGN_OR_RETURN(c.ready, make_replay_provider(spec.substr(7)));
    return c;
  }
  // A real provider: its key is read from the environment here, in the agent process,
  // and never leaves it (moatd and the sandbox get a scrubbed environment).
  MOAT_ASSIGN_OR_RETURN(providers::Config config, providers::load_config());
  MOAT_ASSIGN_OR_RETURN(c.http, providers::provider_settings(spec, config));
  return c;
}

Result<std::unique_ptr<Provider>> finish_provider(CheckedProvider checked) {
  if (checked.ready) return std::move(checked.ready);
  return providers::make_http_provider_loaded(std::move(*checked.http));
}

std::int64_t model_context_window(const std::string& spec) {
  auto m = configured_model(spec);
  return m ? m->context_window : 0;
}

std::int64_t model_max_output(const std::string& spec) {
  auto m = configured_model(spec);
  return m ? m->max_output : 0;
}

}  // namespace moat::agent
