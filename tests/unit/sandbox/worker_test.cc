// tests/unit/sandbox/worker_test.cc: the worker's step names, which travel on the status pipe.
#include "sandbox/worker.h"

#include <gtest/gtest.h>

namespace moat::sandbox {
namespace {

TEST(WorkerSteps, EveryStepNameRoundTrips) {
  for (int i = 1; i <= static_cast<int>(Step::kHandler); ++i) {
    Step s = static_cast<Step>(i);
    EXPECT_EQ(step_from_name(step_name(s)), s) << step_name(s);
  }
}

TEST(WorkerSteps, UnknownNameIsNone) {
  EXPECT_EQ(step_from_name("bogus"), Step::kNone);
  EXPECT_STREQ(step_name(static_cast<Step>(99)), "unknown");
}

TEST(WorkerSteps, SeccompComesAfterEveryOtherRestriction) {
  // The order is the contract (issue 3, item 2): seccomp last, exec after it.
  EXPECT_LT(static_cast<int>(Step::kSetsid), static_cast<int>(Step::kCloseFds));
  EXPECT_LT(static_cast<int>(Step::kCloseFds), static_cast<int>(Step::kRlimits));
  EXPECT_LT(static_cast<int>(Step::kRlimits), static_cast<int>(Step::kCaps));
  EXPECT_LT(static_cast<int>(Step::kCaps), static_cast<int>(Step::kNoNewPrivs));
  EXPECT_LT(static_cast<int>(Step::kNoNewPrivs), static_cast<int>(Step::kSeccomp));
  EXPECT_LT(static_cast<int>(Step::kSeccomp), static_cast<int>(Step::kExec));
}

}  // namespace
}  // namespace moat::sandbox
