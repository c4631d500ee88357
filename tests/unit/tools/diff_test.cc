// tests/unit/tools/diff_test.cc: unified diff hunks, ranges and context.
#include "tools/diff.h"

#include <gtest/gtest.h>

namespace moat::tools {
namespace {

std::string lines(int from, int to) {
  std::string s;
  for (int i = from; i <= to; ++i) s += std::to_string(i) + "\n";
  return s;
}

TEST(UnifiedDiff, FarApartChangesGetTwoHunks) {
  std::string after = lines(1, 20);
  after.replace(after.find("2\n"), 2, "two\n");
  after.replace(after.find("18\n"), 3, "eighteen\n");
  EXPECT_EQ(unified_diff(lines(1, 20), after, "f"),
            "--- a/f\n+++ b/f\n"
            "@@ -1,5 +1,5 @@\n 1\n-2\n+two\n 3\n 4\n 5\n"
            "@@ -15,6 +15,6 @@\n 15\n 16\n 17\n-18\n+eighteen\n 19\n 20\n");
}

TEST(UnifiedDiff, InsertionAtTheStartHasAnEmptyOldRange) {
  EXPECT_EQ(unified_diff("", "new\n", "f"), "--- a/f\n+++ b/f\n@@ -0,0 +1 @@\n+new\n");
  EXPECT_EQ(unified_diff("a\n", "new\na\n", "f"), "--- a/f\n+++ b/f\n@@ -1 +1,2 @@\n+new\n a\n");
}

TEST(UnifiedDiff, DeletionAtTheEnd) {
  EXPECT_EQ(unified_diff("a\nb\n", "a\n", "f"), "--- a/f\n+++ b/f\n@@ -1,2 +1 @@\n a\n-b\n");
}

TEST(UnifiedDiff, CrlfLinesDiffLikeLf) {
  EXPECT_EQ(unified_diff("a\r\nb\r\n", "a\r\nc\r\n", "f"),
            "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n");
}

TEST(UnifiedDiff, IdenticalTextsHaveNoHunks) {
  EXPECT_EQ(unified_diff("same\n", "same\n", "f"), "--- a/f\n+++ b/f\n");
}

}  // namespace
}  // namespace moat::tools
