// tests/unit/tools/glob_test.cc: the glob dialect shared by find, grep's glob and .gitignore.
#include "tools/glob.h"

#include <gtest/gtest.h>

namespace moat::tools {
namespace {

TEST(GlobMatch, StarAndQuestionMarkStopAtSlashes) {
  EXPECT_TRUE(glob_match("*.c", "main.c"));
  EXPECT_FALSE(glob_match("*.c", "src/main.c"));
  EXPECT_TRUE(glob_match("ma?n.c", "main.c"));
  EXPECT_FALSE(glob_match("a?b", "a/b"));
}

TEST(GlobMatch, DoubleStarSpansDirectoriesIncludingNone) {
  EXPECT_TRUE(glob_match("**/*.md", "readme.md"));
  EXPECT_TRUE(glob_match("**/*.md", "docs/deep/readme.md"));
  EXPECT_TRUE(glob_match("src/**", "src/a/b.c"));
  EXPECT_TRUE(glob_match("a/**/b", "a/b"));
  EXPECT_TRUE(glob_match("a/**/b", "a/x/y/b"));
  EXPECT_FALSE(glob_match("a/**/b", "ab"));
}

TEST(GlobMatch, ClassesRangesNegationAndEscapes) {
  EXPECT_TRUE(glob_match("f[0-9].txt", "f7.txt"));
  EXPECT_FALSE(glob_match("f[!0-9].txt", "f7.txt"));
  EXPECT_TRUE(glob_match("f[^0-9].txt", "fx.txt"));
  EXPECT_TRUE(glob_match("\\*.txt", "*.txt"));
  EXPECT_FALSE(glob_match("\\*.txt", "a.txt"));
  EXPECT_TRUE(glob_match("[a", "[a"));  // unterminated class is literal
}

TEST(GlobMatchRelative, NoSlashMatchesTheNameAtAnyDepth) {
  EXPECT_TRUE(glob_match_relative("*.log", "a/b/x.log"));
  EXPECT_TRUE(glob_match_relative("build/", "build"));
  EXPECT_FALSE(glob_match_relative("src/*.c", "lib/src/a.c"));
  EXPECT_TRUE(glob_match_relative("/src/*.c", "src/a.c"));
}

}  // namespace
}  // namespace moat::tools
