// tests/unit/base/timestamps_test.cc: base/timestamps.h.
#include "base/timestamps.h"

#include <gtest/gtest.h>

#include <chrono>
#include <regex>

namespace moat {
namespace {

TEST(Timestamps, FormatsUtcWithTheAskedFractionDigitsTruncatingNotRounding) {
  const timespec ts{1772619302, 118233999};  // 2026-03-04T10:15:02 UTC
  EXPECT_EQ(format_utc(ts, 9), "2026-03-04T10:15:02.118233999Z");
  EXPECT_EQ(format_utc(ts, 3), "2026-03-04T10:15:02.118Z");
}

TEST(Timestamps, KeepsLeadingZerosOfTheFraction) {
  EXPECT_EQ(format_utc(timespec{0, 5}, 9), "1970-01-01T00:00:00.000000005Z");
  EXPECT_EQ(format_utc(timespec{0, 5000000}, 3), "1970-01-01T00:00:00.005Z");
}

TEST(Timestamps, ATimePointFormatsWithNanoseconds) {
  const auto t = std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(
          std::chrono::seconds(1772619302) + std::chrono::nanoseconds(118233140)));
  EXPECT_EQ(rfc3339_ns(t), "2026-03-04T10:15:02.118233140Z");
}

TEST(Timestamps, NowHasTheShapeOfRfc3339Utc) {
  EXPECT_TRUE(
      std::regex_match(now_rfc3339_ns(), std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z)")));
  EXPECT_TRUE(
      std::regex_match(now_rfc3339_ms(), std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)")));
}

TEST(Timestamps, UtcDateIsTheDayOnly) { EXPECT_EQ(utc_date(1772619302), "2026-03-04"); }

}  // namespace
}  // namespace moat
