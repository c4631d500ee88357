// tests/unit/tools/glob_test.cc: the glob dialect shared by find, grep's glob and .gitignore
// (the engine's own tests, GlobMatch.* among them, are in tests/unit/base/glob_test.cc).
#include "tools/glob.h"

#include <gtest/gtest.h>

namespace moat::tools {
namespace {

TEST(GlobMatchRelative, NoSlashMatchesTheNameAtAnyDepth) {
  EXPECT_TRUE(glob_match_relative("*.log", "a/b/x.log"));
  EXPECT_TRUE(glob_match_relative("build/", "build"));
  EXPECT_FALSE(glob_match_relative("src/*.c", "lib/src/a.c"));
  EXPECT_TRUE(glob_match_relative("/src/*.c", "src/a.c"));
}

}  // namespace
}  // namespace moat::tools
