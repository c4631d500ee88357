// tests/unit/tools/gitignore_test.cc: gitignore(5) rules as the built-in walk applies them.
#include "tools/gitignore.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/unit/tools/harness.h"

namespace moat::tools {
namespace {

class GitIgnoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ws_ = std::filesystem::canonical(testing::make_workspace_dir()).string();
  }
  void TearDown() override { std::filesystem::remove_all(ws_); }
  void file(const std::string& rel, const std::string& content) {
    std::filesystem::create_directories(std::filesystem::path(ws_ + "/" + rel).parent_path());
    std::ofstream(ws_ + "/" + rel) << content;
  }
  bool ignored(const std::string& rel, bool is_dir = false) {
    return ig_.is_ignored(ws_ + "/" + rel, is_dir);
  }
  std::string ws_;
  GitIgnore ig_;
};

TEST_F(GitIgnoreTest, NamesWithoutSlashMatchAtAnyDepth) {
  file(".gitignore", "*.o\n# comment\n\n");
  EXPECT_TRUE(ignored("a.o"));
  EXPECT_TRUE(ignored("deep/er/b.o"));
  EXPECT_FALSE(ignored("a.c"));
}

TEST_F(GitIgnoreTest, TheLastMatchingLineWinsAndBangReincludes) {
  file(".gitignore", "*.log\n!keep.log\n");
  EXPECT_TRUE(ignored("x.log"));
  EXPECT_FALSE(ignored("keep.log"));
}

TEST_F(GitIgnoreTest, TrailingSlashMatchesDirectoriesOnly) {
  file(".gitignore", "build/\n");
  EXPECT_TRUE(ignored("build", true));
  EXPECT_FALSE(ignored("build", false));
}

TEST_F(GitIgnoreTest, ASlashAnchorsToTheFilesDirectory) {
  file(".gitignore", "/top.txt\ndocs/*.md\n");
  EXPECT_TRUE(ignored("top.txt"));
  EXPECT_FALSE(ignored("sub/top.txt"));
  EXPECT_TRUE(ignored("docs/a.md"));
  EXPECT_FALSE(ignored("x/docs/a.md"));
}

TEST_F(GitIgnoreTest, DeeperFilesOverrideShallowerOnes) {
  file(".gitignore", "*.txt\n");
  file("sub/.gitignore", "!want.txt\n");
  EXPECT_TRUE(ignored("sub/other.txt"));
  EXPECT_FALSE(ignored("sub/want.txt"));
}

TEST_F(GitIgnoreTest, EscapedHashAndTrailingSpaces) {
  file(".gitignore", "\\#literal\nspaced   \n");
  EXPECT_TRUE(ignored("#literal"));
  EXPECT_TRUE(ignored("spaced"));
}

TEST_F(GitIgnoreTest, ExcludedBelowSeesIgnoredParentDirectories) {
  file(".gitignore", "node_modules/\n");
  EXPECT_TRUE(ig_.is_excluded_below(ws_, ws_ + "/node_modules/pkg/index.js", false));
  EXPECT_FALSE(ig_.is_excluded_below(ws_, ws_ + "/src/index.js", false));
}

}  // namespace
}  // namespace moat::tools
