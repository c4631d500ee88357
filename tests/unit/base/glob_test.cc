// tests/unit/base/glob_test.cc: the one glob engine: word globs, and paths matched component by
// component, with the policy's and the search tools' reading of a trailing "**".
#include "base/glob.h"

#include <gtest/gtest.h>

namespace moat::glob {
namespace {

// From tests/unit/policy/globs_test.cc (policy::word_glob_matches).
TEST(WordGlob, StarQuestionAndClassesMatchLikeFnmatch) {
  EXPECT_TRUE(word_matches("*", ""));
  EXPECT_TRUE(word_matches("mkfs.*", "mkfs.ext4"));
  EXPECT_FALSE(word_matches("mkfs.*", "mkfs"));
  EXPECT_TRUE(word_matches("+*", "+main"));
  EXPECT_FALSE(word_matches("+*", "main"));
  EXPECT_TRUE(word_matches("a?c", "abc"));
  EXPECT_TRUE(word_matches("[a-c]x", "bx"));
  EXPECT_FALSE(word_matches("[!a-c]x", "bx"));
  EXPECT_TRUE(word_matches("\\*", "*"));
  EXPECT_FALSE(word_matches("\\*", "a"));
  EXPECT_TRUE(word_matches("*system*", "BEGIN{system(1)}"));
  EXPECT_TRUE(word_matches("[", "["));  // unterminated class: literal
}

// The search tools' reading (tools/glob.h): "dir/**" is what lies below dir.
bool tool(std::string_view pattern, std::string_view path) {
  return path_matches(pattern, path, {.trailing = TrailingStars::kOnlyBelow});
}

// From tests/unit/tools/glob_test.cc (tools::glob_match).
TEST(GlobMatch, StarAndQuestionMarkStopAtSlashes) {
  EXPECT_TRUE(tool("*.c", "main.c"));
  EXPECT_FALSE(tool("*.c", "src/main.c"));
  EXPECT_TRUE(tool("ma?n.c", "main.c"));
  EXPECT_FALSE(tool("a?b", "a/b"));
}

TEST(GlobMatch, DoubleStarSpansDirectoriesIncludingNone) {
  EXPECT_TRUE(tool("**/*.md", "readme.md"));
  EXPECT_TRUE(tool("**/*.md", "docs/deep/readme.md"));
  EXPECT_TRUE(tool("src/**", "src/a/b.c"));
  EXPECT_TRUE(tool("a/**/b", "a/b"));
  EXPECT_TRUE(tool("a/**/b", "a/x/y/b"));
  EXPECT_FALSE(tool("a/**/b", "ab"));
}

TEST(GlobMatch, ClassesRangesNegationAndEscapes) {
  EXPECT_TRUE(tool("f[0-9].txt", "f7.txt"));
  EXPECT_FALSE(tool("f[!0-9].txt", "f7.txt"));
  EXPECT_TRUE(tool("f[^0-9].txt", "fx.txt"));
  EXPECT_TRUE(tool("\\*.txt", "*.txt"));
  EXPECT_FALSE(tool("\\*.txt", "a.txt"));
  EXPECT_TRUE(tool("[a", "[a"));  // unterminated class is literal
}

// Issue 28: the masker read "**/secrets/*.pem" with fnmatch and no FNM_PATHNAME, so its '*'
// crossed a '/'. A wildcard stays in its component whatever else the pattern holds.
TEST(PathGlob, AWildcardStaysInItsComponentBesideADoubleStar) {
  EXPECT_TRUE(path_matches("**/secrets/*.pem", "x/secrets/a.pem"));
  EXPECT_TRUE(path_matches("**/secrets/*.pem", "secrets/a.pem"));
  EXPECT_FALSE(path_matches("**/secrets/*.pem", "x/secrets/deep/a.pem"));
  EXPECT_FALSE(path_matches("**/a?b", "x/a/b"));
  EXPECT_FALSE(path_matches("**/[a/]b", "x/a/b"));
  EXPECT_TRUE(path_matches("**/cache/**/*.tmp", "cache/x.tmp"));
  EXPECT_TRUE(path_matches("a**b/c", "axyb/c"));  // "**" inside a component is two '*'
  EXPECT_FALSE(path_matches("a**b/c", "ax/yb/c"));
  const auto pem = split_path("**/secrets/*.pem");  // the masker splits its patterns once
  EXPECT_TRUE(path_matches_parts(pem, "x/secrets/a.pem"));
  EXPECT_FALSE(path_matches_parts(pem, "x/secrets/deep/a.pem"));
}

TEST(PathGlob, ATrailingDoubleStarCoversTheDirectoryOnlyInThePolicysReading) {
  EXPECT_TRUE(path_matches("dir/**", "dir"));
  EXPECT_TRUE(path_matches("dir/**", "dir/a/b"));
  EXPECT_FALSE(tool("dir/**", "dir"));
  EXPECT_TRUE(tool("dir/**", "dir/a/b"));
  EXPECT_TRUE(path_matches("**", "any/thing"));
}

TEST(PathGlob, AnOpenEndMatchesWhatAPathBelowCouldMatch) {
  EXPECT_TRUE(path_matches("a/b/*.pem", "a", {.open_end = true}));
  EXPECT_FALSE(path_matches("a/b/*.pem", "a", {}));
  EXPECT_FALSE(path_matches("a/b/*.pem", "c", {.open_end = true}));
}

TEST(SplitPath, EmptyComponentsAreDropped) {
  EXPECT_EQ(split_path("/a//b/"), (std::vector<std::string_view>{"a", "b"}));
  EXPECT_TRUE(split_path("/").empty());
  EXPECT_TRUE(split_path("").empty());
}

}  // namespace
}  // namespace moat::glob
