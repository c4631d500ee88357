// tests/unit/base/stop_flags_test.cc: FlagStop, the stop a bare flag raises (base/stop_flags.h).
#include "base/stop_flags.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace moat {
namespace {

using Clock = std::chrono::steady_clock;

TEST(FlagStop, AFlagRaisedLaterStopsTheTokenWithinAFewTicks) {
  std::atomic<bool> flag{false};
  FlagStop stop(&flag);
  EXPECT_FALSE(stop.token().stop_requested());
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const auto t0 = Clock::now();
  flag = true;
  while (!stop.token().stop_requested() && Clock::now() - t0 < std::chrono::seconds(5))
    std::this_thread::yield();
  EXPECT_TRUE(stop.token().stop_requested());
  EXPECT_LT(Clock::now() - t0, 20 * ticks::kBareFlag);
}

TEST(FlagStop, AFlagAlreadyRaisedStopsAtOnceAndNullNeverStops) {
  std::atomic<bool> flag{true};
  EXPECT_TRUE(FlagStop(&flag).token().stop_requested());
  EXPECT_FALSE(FlagStop(nullptr).token().stop_requested());
  EXPECT_TRUE(FlagStop(nullptr).token().stop_possible());
}

TEST(FlagStop, ItsWatchEndsWhenItIsDestroyedAndTheFlagIsNeverRaised) {
  std::atomic<bool> flag{false};
  const auto t0 = Clock::now();
  { FlagStop stop(&flag); }
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(1));
}

}  // namespace
}  // namespace moat
