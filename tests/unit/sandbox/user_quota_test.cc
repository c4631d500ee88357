// tests/unit/sandbox/user_quota_test.cc: the audit bytes a user's sessions may write in a UTC day
// (sandbox/user_quota.h AuditBytesQuota), with a real counter folder and the day as a test hook.
#include "sandbox/user_quota.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <filesystem>
#include <string>

#include "tests/unit/sessions/temp_dir.h"

namespace moat::sandbox {
namespace {

using sessions::testing::slurp;
using sessions::testing::TempDir;

class AuditBytesQuotaTest : public ::testing::Test {
 protected:
  TempDir dir_;
  std::string day_ = "2026-12-06";
  AuditBytesQuota quota_{100, "/etc/moat/moatd.toml", dir_.path() + "/quota",
                         [this] { return day_; }};
};

// Only the record that lets something run is refused once the day's bytes reach the quota;
// every other record is counted and written; the count is each uid's own.
TEST_F(AuditBytesQuotaTest, OnceReachedOnlyADecisionAndAHelloAreRefusedAndOnlyForThatUid) {
  ASSERT_TRUE(quota_.admit(1000, "session.start", 60));
  ASSERT_TRUE(quota_.admit(1000, "decision", 40));
  const auto refused = quota_.admit(1000, "decision", 1);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, EDQUOT);
  EXPECT_NE(refused.error().message().find("quota.audit_bytes_per_day = 100 in "
                                           "/etc/moat/moatd.toml (moatd's quota, set by its "
                                           "operator): uid 1000's sessions wrote 100 bytes"),
            std::string::npos)
      << refused.error().message();
  EXPECT_TRUE(quota_.admit(1000, "call", 30));
  EXPECT_TRUE(quota_.admit(1000, "session.end", 30));
  EXPECT_FALSE(quota_.check(1000));
  EXPECT_EQ(slurp(dir_.path() + "/quota/audit-bytes-1000"), "2026-12-06 160\n");
  EXPECT_TRUE(quota_.check(1001));
  EXPECT_TRUE(quota_.admit(1001, "decision", 10));
}

// A new UTC day starts at 0 while moatd runs, and the file says which day it counts.
TEST_F(AuditBytesQuotaTest, ANewUtcDayStartsAtZeroWithoutARestart) {
  ASSERT_TRUE(quota_.admit(1000, "decision", 100));
  EXPECT_FALSE(quota_.check(1000));
  day_ = "2026-12-07";
  EXPECT_TRUE(quota_.check(1000));
  EXPECT_TRUE(quota_.admit(1000, "decision", 5));
  EXPECT_TRUE(quota_.admit(1000, "session.end", 7));
  EXPECT_EQ(slurp(dir_.path() + "/quota/audit-bytes-1000"), "2026-12-07 12\n");
}

// The file is written when a log ends or checkpoints, or the quota is reached, not at each line.
TEST_F(AuditBytesQuotaTest, TheCountIsWrittenAtALogsEndNotAtEachLine) {
  ASSERT_TRUE(quota_.admit(1000, "session.start", 10));
  ASSERT_TRUE(quota_.admit(1000, "decision", 10));
  EXPECT_FALSE(std::filesystem::exists(dir_.path() + "/quota/audit-bytes-1000"));
  ASSERT_TRUE(quota_.admit(1000, "checkpoint", 10));
  EXPECT_EQ(slurp(dir_.path() + "/quota/audit-bytes-1000"), "2026-12-06 30\n");
}

}  // namespace
}  // namespace moat::sandbox
