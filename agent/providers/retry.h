// agent/providers/retry.h: which provider failures are retried, and how long to wait.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <string_view>

namespace moat::agent::providers {

struct RetryPolicy {
  int max_retries = 4;                               // attempts after the first
  std::chrono::milliseconds base_delay{1000};        // doubled each attempt, then jittered
  std::chrono::milliseconds max_delay{30000};        // cap of the computed backoff
  std::chrono::milliseconds max_retry_after{60000};  // a longer retry-after fails instead
};

// 429 (except insufficient_quota), 408, 5xx, 529 and the overload/rate-limit error types are
// transient. Quota, authentication, permission and request errors (400) never get better by
// waiting, so they fail at once. `kind` is the provider's error type or code, or a
// transport kind ("connect_failed", "idle_timeout", "incomplete_stream", ...). A refused
// connection ("connect_refused") fails at once: the host answered that nothing listens.
bool is_retryable(int status, std::string_view kind);

// The server's requested wait: retry-after-ms (OpenAI), else retry-after as seconds or an
// HTTP-date. Header names are lower-case.
std::optional<std::chrono::milliseconds> retry_after(
    const std::map<std::string, std::string>& headers);

// Exponential backoff with "equal jitter": half the step is fixed, half random, so retries
// of many clients spread out while each still waits a meaningful minimum.
std::chrono::milliseconds backoff_delay(const RetryPolicy& policy, int attempt,
                                        std::mt19937_64& rng);

}  // namespace moat::agent::providers
