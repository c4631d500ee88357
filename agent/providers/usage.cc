// agent/providers/usage.cc: cost arithmetic and the cache-miss audit.
#include "agent/providers/usage.h"

#include <algorithm>

#include "agent/providers/json_util.h"

namespace moat::agent::providers {

Usage Usage::from_message(const nlohmann::json& message) {
  Usage u;
  const json* m = field(message, "usage");
  if (!m) return u;
  u.input = int_field(*m, "input").value_or(0);
  u.output = int_field(*m, "output").value_or(0);
  u.cache_read = int_field(*m, "cacheRead").value_or(0);
  u.cache_write = int_field(*m, "cacheWrite").value_or(0);
  u.cache_write_1h = int_field(*m, "cacheWrite1h").value_or(0);
  return u;
}

namespace {

// The four buckets, named as on the wire; usage and cost each add their own last field.
template <typename T>
nlohmann::json buckets_json(T input, T output, T cache_read, T cache_write) {
  return {
      {"input", input}, {"output", output}, {"cacheRead", cache_read}, {"cacheWrite", cache_write}};
}

}  // namespace

nlohmann::json Usage::to_json() const {
  nlohmann::json j = buckets_json(input, output, cache_read, cache_write);
  j["cacheWrite1h"] = cache_write_1h;
  return j;
}

nlohmann::json Cost::to_json() const {
  nlohmann::json j = buckets_json(input, output, cache_read, cache_write);
  j["total"] = total;
  return j;
}

namespace {

// The base prices, or the highest tier the prompt is above.
PriceTier effective_prices(const Pricing& p, int64_t prompt) {
  PriceTier best{0, p.input, p.output, p.cache_read, p.cache_write, p.cache_write_1h};
  int64_t best_threshold = -1;
  for (const auto& t : p.tiers)
    if (prompt > t.above_input_tokens && t.above_input_tokens > best_threshold) {
      best = t;
      best_threshold = t.above_input_tokens;
    }
  return best;
}

constexpr double kPerToken = 1e-6;  // prices are per million tokens

}  // namespace

Cost cost_of(const Usage& u, const Pricing& pricing) {
  const PriceTier p = effective_prices(pricing, u.prompt());
  // A 1h cache write costs twice the base input price unless the model lists its own.
  const double write_1h = p.cache_write_1h.value_or(2.0 * p.input);
  const int64_t write_5m = std::max<int64_t>(0, u.cache_write - u.cache_write_1h);
  Cost c;
  c.input = u.input * p.input * kPerToken;
  c.output = u.output * p.output * kPerToken;
  c.cache_read = u.cache_read * p.cache_read * kPerToken;
  c.cache_write = (write_5m * p.cache_write + u.cache_write_1h * write_1h) * kPerToken;
  c.total = c.input + c.output + c.cache_read + c.cache_write;
  return c;
}

void SessionTotals::add(const Usage& u, const Cost& c) {
  usage.input += u.input;
  usage.output += u.output;
  usage.cache_read += u.cache_read;
  usage.cache_write += u.cache_write;
  usage.cache_write_1h += u.cache_write_1h;
  cost.input += c.input;
  cost.output += c.output;
  cost.cache_read += c.cache_read;
  cost.cache_write += c.cache_write;
  cost.total += c.total;
  ++answers;
}

nlohmann::json SessionTotals::to_json() const {
  return {{"answers", answers}, {"usage", usage.to_json()}, {"cost", cost.to_json()}};
}

nlohmann::json CacheMiss::to_json() const {
  return {{"missedTokens", missed_tokens}, {"cost", cost}, {"reason", reason}};
}

std::optional<CacheMiss> audit_cache(const std::optional<CacheState>& previous,
                                     const std::string& model, const Usage& usage,
                                     const Pricing& pricing,
                                     std::chrono::system_clock::time_point now,
                                     std::chrono::seconds ttl) {
  if (!previous) return std::nullopt;
  // Only what both prompts share could have been a hit: a shorter prompt (after
  // compaction) cannot read more than itself.
  const int64_t missed = std::min(previous->prompt, usage.prompt()) - usage.cache_read;
  if (missed < kCacheMissThreshold) return std::nullopt;
  CacheMiss miss;
  miss.missed_tokens = missed;
  const PriceTier p = effective_prices(pricing, usage.prompt());
  // The miss cost is what the tokens cost at full input price instead of as cache reads.
  miss.cost = missed * (p.input - p.cache_read) * kPerToken;
  const auto gap = now - previous->at;
  if (previous->model != model) {
    miss.reason = "model changed (" + previous->model + " -> " + model + ")";
  } else if (gap > ttl) {
    miss.reason = "cache TTL expired (" +
                  std::to_string(std::chrono::duration_cast<std::chrono::seconds>(gap).count()) +
                  "s since the previous answer, TTL " + std::to_string(ttl.count()) + "s)";
  } else {
    miss.reason = "prefix changed";
  }
  return miss;
}

}  // namespace moat::agent::providers
