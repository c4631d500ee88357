// tests/unit/sandbox/connection_limit_test.cc: what connections may hold before their hello,
// per local user and in all (sandbox/connection_limit.h).
#include "sandbox/connection_limit.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

namespace moat::sandbox {
namespace {

TEST(UnauthenticatedBytes, OneUsersShareAndTheTotalAreBoundedAndGivenBack) {
  UnauthenticatedBytes budget(/*per_user=*/100, /*total=*/150);
  UnauthenticatedBytes::Share a1(&budget, 1), a2(&budget, 1), b(&budget, 2), c(&budget, 3);
  ASSERT_TRUE(a1.set(60));
  auto over_user = a2.set(41);
  ASSERT_FALSE(over_user);
  EXPECT_NE(over_user.error().message().find("uid 1's connections"), std::string::npos)
      << over_user.error().message();
  ASSERT_TRUE(a2.set(40));  // exactly the user's share
  ASSERT_TRUE(b.set(50));   // exactly the total
  auto over_total = c.set(1);
  ASSERT_FALSE(over_total);
  EXPECT_NE(over_total.error().message().find("the limit is 150"), std::string::npos)
      << over_total.error().message();
  // A share shrinks without a check, and what it gives back is another's.
  ASSERT_TRUE(a1.set(10));
  EXPECT_TRUE(c.set(50));
  {
    UnauthenticatedBytes::Share gone(&budget, 4);
    EXPECT_FALSE(gone.set(1));  // the total is full again
  }
  ASSERT_TRUE(a2.set(0));
  UnauthenticatedBytes::Share d(&budget, 4);
  EXPECT_TRUE(d.set(40));  // a2's 40 came back
}

TEST(UnauthenticatedBytes, AShareWithoutABudgetBoundsNothing) {
  UnauthenticatedBytes::Share unbounded(nullptr, 1);
  EXPECT_TRUE(unbounded.set(std::size_t{1} << 40));
}

}  // namespace
}  // namespace moat::sandbox
