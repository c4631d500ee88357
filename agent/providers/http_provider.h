// agent/providers/http_provider.h: a Provider that streams one answer over HTTP, for any of
// the three APIs, with retries.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "agent/provider.h"
#include "agent/providers/decoder.h"
#include "agent/providers/http_stream.h"
#include "agent/providers/retry.h"

namespace moat::agent::providers {

// Told before each wait, so the user sees why nothing is happening.
struct RetryNotice {
  int attempt;                      // 1 for the first retry
  std::chrono::milliseconds delay;  // how long we wait before it
  std::string reason;               // "HTTP 429 rate_limit_error: ..." (no key)
};

struct ProviderSettings {
  std::string name;  // "anthropic", "openai", "ollama", ... (messages and errors)
  Api api = Api::kOpenAiChat;
  std::string base_url;  // up to and including the version: "https://api.openai.com/v1"
  std::string api_key;   // empty: no auth header (local servers). Never logged or echoed.
  std::vector<std::string> extra_headers;  // "Name: value"
  std::string model;
  bool legacy_max_tokens = false;  // OpenAI-compatible servers: max_tokens
  int64_t thinking_budget = 0;     // Anthropic extended thinking (0 = off)
  RetryPolicy retry;
  std::chrono::milliseconds connect_timeout = kDefaultConnectTimeout;
  std::chrono::milliseconds idle_timeout = kDefaultIdleTimeout;
  std::function<void(const RetryNotice&)> on_retry;
};

// complete() returns the assistant message, or an Error whose code is the HTTP status (0 for
// transport failures) and whose context names the provider, the status and the provider's
// message. A cancelled request returns a message with stopReason "aborted", the text
// streamed so far and no tool calls, so the session stays consistent.
std::unique_ptr<Provider> make_http_provider(ProviderSettings settings);

}  // namespace moat::agent::providers
