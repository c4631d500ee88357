// tests/unit/agent/providers/usage_test.cc: cost per bucket, tiers, 1h writes, totals, cache audit.
#include "agent/providers/usage.h"

#include <gtest/gtest.h>

namespace moat::agent::providers {
namespace {

using namespace std::chrono_literals;

Pricing sonnet() {
  Pricing p{3, 15, 0.3, 3.75, std::nullopt, {}};
  p.tiers.push_back({200000, 6, 22.5, 0.6, 7.5, std::nullopt});
  return p;
}

TEST(CostOf, EachBucketAtItsPriceAndOneHourWritesAtTwiceInput) {
  Usage u{1000, 500, 2000, 3000, 1000};
  const Cost c = cost_of(u, sonnet());
  EXPECT_DOUBLE_EQ(c.input, 1000 * 3e-6);
  EXPECT_DOUBLE_EQ(c.output, 500 * 15e-6);
  EXPECT_DOUBLE_EQ(c.cache_read, 2000 * 0.3e-6);
  // 2000 five-minute writes at 3.75, 1000 one-hour writes at 2 x 3 = 6.
  EXPECT_DOUBLE_EQ(c.cache_write, 2000 * 3.75e-6 + 1000 * 6e-6);
  EXPECT_DOUBLE_EQ(c.total, 0.003 + 0.0075 + 0.0006 + 0.0135);
}

TEST(CostOf, ExplicitOneHourPriceWins) {
  Pricing p = sonnet();
  p.cache_write_1h = 5;
  EXPECT_DOUBLE_EQ(cost_of({0, 0, 0, 1000, 1000}, p).cache_write, 1000 * 5e-6);
}

TEST(CostOf, TierAppliesToTheWholeRequestOnlyAboveItsThreshold) {
  const Usage at{150000, 100, 50000, 0, 0};  // prompt exactly 200000: not above
  EXPECT_DOUBLE_EQ(cost_of(at, sonnet()).input, 150000 * 3e-6);
  const Usage above{150001, 100, 50000, 0, 0};
  const Cost c = cost_of(above, sonnet());
  EXPECT_DOUBLE_EQ(c.input, 150001 * 6e-6);  // every token, not only those above 200k
  EXPECT_DOUBLE_EQ(c.output, 100 * 22.5e-6);
  EXPECT_DOUBLE_EQ(c.cache_read, 50000 * 0.6e-6);
}

TEST(CostOf, HighestMatchingTierWinsWhateverTheListOrder) {
  Pricing p{1, 1, 0, 0, std::nullopt, {}};
  p.tiers = {{500, 3, 3, 0, 0, std::nullopt}, {100, 2, 2, 0, 0, std::nullopt}};
  EXPECT_DOUBLE_EQ(cost_of({200, 0, 0, 0, 0}, p).input, 200 * 2e-6);
  EXPECT_DOUBLE_EQ(cost_of({600, 0, 0, 0, 0}, p).input, 600 * 3e-6);
}

TEST(Usage, ReadsMoatsMessageShape) {
  nlohmann::json m = {
      {"usage",
       {{"input", 1}, {"output", 2}, {"cacheRead", 3}, {"cacheWrite", 4}, {"cacheWrite1h", 1}}}};
  const Usage u = Usage::from_message(m);
  EXPECT_EQ(u.prompt(), 1 + 3 + 4);
  EXPECT_EQ(u.to_json(), m["usage"]);
}

TEST(SessionTotals, SumsUsageAndCost) {
  SessionTotals t;
  t.add({10, 20, 30, 40, 0}, Cost{1, 2, 3, 4, 10});
  t.add({1, 2, 3, 4, 4}, Cost{0.5, 0, 0, 0, 0.5});
  EXPECT_EQ(t.answers, 2);
  EXPECT_EQ(t.usage.input, 11);
  EXPECT_EQ(t.usage.cache_write_1h, 4);
  EXPECT_DOUBLE_EQ(t.cost.total, 10.5);
}

class AuditCache : public ::testing::Test {
 protected:
  std::chrono::system_clock::time_point t0 = std::chrono::system_clock::time_point(1000000s);
  CacheState prev{"m", 10000, t0};
};

TEST_F(AuditCache, FirstAnswerHasNothingToCompare) {
  EXPECT_FALSE(audit_cache(std::nullopt, "m", {10000, 1, 0, 0, 0}, sonnet(), t0));
}

TEST_F(AuditCache, FullHitIsNotAMiss) {
  EXPECT_FALSE(audit_cache(prev, "m", {500, 1, 10000, 0, 0}, sonnet(), t0 + 10s));
}

TEST_F(AuditCache, MissUnder1024TokensIsIgnored) {
  EXPECT_FALSE(audit_cache(prev, "m", {1500, 1, 10000 - 1023, 0, 0}, sonnet(), t0 + 10s));
  EXPECT_TRUE(audit_cache(prev, "m", {1500, 1, 10000 - 1024, 0, 0}, sonnet(), t0 + 10s));
}

TEST_F(AuditCache, MissedIsTheSharedPartMinusCacheReadAndItsCost) {
  auto miss = audit_cache(prev, "m", {12000, 1, 2000, 0, 0}, sonnet(), t0 + 10s);
  ASSERT_TRUE(miss);
  EXPECT_EQ(miss->missed_tokens, 10000 - 2000);  // min(10000, 14000) - 2000
  EXPECT_DOUBLE_EQ(miss->cost, 8000 * (3 - 0.3) * 1e-6);
  EXPECT_EQ(miss->reason, "prefix changed");
}

TEST_F(AuditCache, ShorterPromptBoundsTheMiss) {
  auto miss = audit_cache(prev, "m", {3000, 1, 0, 0, 0}, sonnet(), t0 + 10s);
  ASSERT_TRUE(miss);
  EXPECT_EQ(miss->missed_tokens, 3000);
}

TEST_F(AuditCache, LabelsModelChangeAndTtlGap) {
  auto changed = audit_cache(prev, "other", {10000, 1, 0, 0, 0}, sonnet(), t0 + 10s);
  ASSERT_TRUE(changed);
  EXPECT_EQ(changed->reason, "model changed (m -> other)");
  auto expired = audit_cache(prev, "m", {10000, 1, 0, 0, 0}, sonnet(), t0 + 301s);
  ASSERT_TRUE(expired);
  EXPECT_NE(expired->reason.find("cache TTL expired (301s"), std::string::npos) << expired->reason;
  EXPECT_FALSE(
      audit_cache(prev, "m", {10000, 1, 0, 0, 0}, sonnet(), t0 + 301s, 1h)->reason.find("TTL") !=
      std::string::npos);
}

}  // namespace
}  // namespace moat::agent::providers
