// agent/providers/retry.cc: retry classification, retry-after parsing and backoff.
#include "agent/providers/retry.h"

#include <ctime>

namespace moat::agent::providers {

bool is_retryable(int status, std::string_view kind) {
  // Checked before the status: OpenAI sends insufficient_quota as a 429 that no wait fixes.
  for (std::string_view fatal :
       {"insufficient_quota", "authentication_error", "permission_error", "invalid_request_error",
        "context_length_exceeded", "invalid_api_key", "billing_hard_limit_reached"})
    if (kind == fatal) return false;
  for (std::string_view transient :
       {"overloaded_error", "rate_limit_error", "api_error", "server_error", "rate_limit_exceeded",
        "connect_failed", "idle_timeout", "connection_broken", "incomplete_stream",
        "malformed_chunk"})
    if (kind == transient) return true;
  return status == 408 || status == 429 || status == 529 || (status >= 500 && status < 600);
}

namespace {

std::optional<long long> parse_non_negative(const std::string& v) {
  if (v.empty() || v.size() > 12 || v.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  return std::stoll(v);
}

}  // namespace

std::optional<std::chrono::milliseconds> retry_after(
    const std::map<std::string, std::string>& headers) {
  if (auto it = headers.find("retry-after-ms"); it != headers.end())
    if (auto ms = parse_non_negative(it->second)) return std::chrono::milliseconds(*ms);
  auto it = headers.find("retry-after");
  if (it == headers.end()) return std::nullopt;
  if (auto s = parse_non_negative(it->second)) return std::chrono::milliseconds(*s * 1000);
  // RFC 9110 §10.2.3: an HTTP-date, e.g. "Wed, 21 Oct 2015 07:28:00 GMT".
  std::tm tm{};
  if (strptime(it->second.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &tm) == nullptr)
    return std::nullopt;
  const std::time_t when = timegm(&tm);
  const std::time_t now = std::time(nullptr);
  return std::chrono::milliseconds(when > now ? (when - now) * 1000LL : 0LL);
}

std::chrono::milliseconds backoff_delay(const RetryPolicy& policy, int attempt,
                                        std::mt19937_64& rng) {
  long long step = policy.base_delay.count();
  for (int i = 0; i < attempt && step < policy.max_delay.count(); ++i) step *= 2;
  if (step > policy.max_delay.count()) step = policy.max_delay.count();
  std::uniform_int_distribution<long long> half(0, step / 2);
  return std::chrono::milliseconds(step - step / 2 + half(rng));
}

}  // namespace moat::agent::providers
