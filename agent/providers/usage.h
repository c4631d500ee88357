// agent/providers/usage.h: token usage in four buckets, its cost, session totals, and the
// cache-miss audit the loop runs after each answer.
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace moat::agent::providers {

// Prices in USD per million tokens.
struct PriceTier {
  int64_t above_input_tokens = 0;  // applies when the request's prompt exceeds this
  double input = 0, output = 0, cache_read = 0, cache_write = 0;
  std::optional<double> cache_write_1h;  // absent: twice the tier's input price
};

struct Pricing {
  double input = 0, output = 0, cache_read = 0, cache_write = 0;
  std::optional<double> cache_write_1h;  // absent: twice the input price (Anthropic's rule)
  std::vector<PriceTier> tiers;          // any order; the highest matching one wins
};

// One answer's usage. cache_write includes cache_write_1h (the 1h part of the writes).
struct Usage {
  int64_t input = 0, output = 0, cache_read = 0, cache_write = 0, cache_write_1h = 0;
  int64_t prompt() const { return input + cache_read + cache_write; }  // whole prompt size
  static Usage from_message(const nlohmann::json& assistant_message);  // its "usage"
  nlohmann::json to_json()
      const;  // moat's shape: {input, output, cacheRead, cacheWrite, cacheWrite1h}
};

struct Cost {
  double input = 0, output = 0, cache_read = 0, cache_write = 0, total = 0;
  nlohmann::json to_json() const;
};

// The tier whose threshold the prompt exceeds by the most applies to the whole request,
// not only to the tokens above the threshold (as Anthropic and Google bill long contexts).
Cost cost_of(const Usage& usage, const Pricing& pricing);

// Running totals of a session.
struct SessionTotals {
  Usage usage;
  Cost cost;
  int answers = 0;
  void add(const Usage& u, const Cost& c);
  nlohmann::json to_json() const;
};

// What the previous answer left in the provider's cache.
struct CacheState {
  std::string model;
  int64_t prompt = 0;
  std::chrono::system_clock::time_point at;
};

// A cache miss worth telling the user about: the part of the prompt that could have been
// read from the cache (it was sent last time too) but was not.
struct CacheMiss {
  int64_t missed_tokens = 0;  // min(previous prompt, this prompt) - cacheRead
  double cost = 0;            // what those tokens cost as input minus as cache reads
  std::string reason;         // "model changed", "cache TTL expired (...)", or "prefix changed"
  nlohmann::json to_json() const;
};

constexpr int64_t kCacheMissThreshold = 1024;  // below it, providers do not cache at all

// Run after each answer, before updating `previous`. `ttl` is the cache lifetime the
// request asked for (5 minutes by default). Returns nothing for the first answer or when the
// miss is under kCacheMissThreshold tokens.
std::optional<CacheMiss> audit_cache(const std::optional<CacheState>& previous,
                                     const std::string& model, const Usage& usage,
                                     const Pricing& pricing,
                                     std::chrono::system_clock::time_point now,
                                     std::chrono::seconds ttl = std::chrono::minutes(5));

}  // namespace moat::agent::providers
