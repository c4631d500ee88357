// tests/unit/sandbox/protect_test.cc: which path a protected entry masks (the path, the first
// symlink on the way, or the first missing component), and which placeholders are removed.
#include "sandbox/protect.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <vector>

namespace moat::sandbox {
namespace {

class MaskTargetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (std::filesystem::temp_directory_path() / "moat-mask-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    ws_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(ws_); }
  std::string ws_;
};

TEST_F(MaskTargetTest, ExistingPathIsMaskedItself) {
  std::filesystem::create_directories(ws_ + "/.git/hooks");
  auto t = mask_target(ws_, ".git/hooks");
  ASSERT_TRUE(t);
  EXPECT_EQ(*t, ws_ + "/.git/hooks");
}

TEST_F(MaskTargetTest, MissingPathMasksTheFirstMissingComponent) {
  auto t = mask_target(ws_, ".git/hooks");
  ASSERT_TRUE(t);
  EXPECT_EQ(*t, ws_ + "/.git");
  std::filesystem::create_directories(ws_ + "/.git");
  EXPECT_EQ(*mask_target(ws_, ".git/hooks"), ws_ + "/.git/hooks");
}

TEST_F(MaskTargetTest, SymlinkIsMaskedAsTheLinkNotItsTarget) {
  std::filesystem::create_directories(ws_ + "/real");
  std::filesystem::create_directory_symlink("/etc", ws_ + "/.git");
  auto t = mask_target(ws_, ".git/hooks");
  ASSERT_TRUE(t);
  EXPECT_EQ(*t, ws_ + "/.git");
}

TEST_F(MaskTargetTest, DotDotIsRefusedWithEinval) {
  auto t = mask_target(ws_, "../outside");
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error().code, EINVAL);
}

TEST_F(MaskTargetTest, FileInTheMiddleIsMasked) {
  std::ofstream(ws_ + "/.moat") << "x";
  EXPECT_EQ(*mask_target(ws_, ".moat/policy.toml"), ws_ + "/.moat");
}

// remove_placeholders runs on the host after the session: only what was created, only if empty.
class RemovePlaceholdersTest : public MaskTargetTest {
 protected:
  Placeholder made(const std::string& rel) {
    std::filesystem::create_directories(ws_ + "/" + rel);
    return recorded(rel, ws_ + "/" + rel);
  }
  static Placeholder recorded(const std::string& rel, const std::string& real) {
    struct stat st {};
    EXPECT_EQ(::stat(real.c_str(), &st), 0) << real;
    return {rel, st.st_dev, st.st_ino};
  }
};

TEST_F(RemovePlaceholdersTest, EmptyOnesGoDeepestFirst) {
  std::vector<Placeholder> ps = {made("a"), made("a/b"), made(".moat")};
  ASSERT_TRUE(remove_placeholders(ws_, ps));
  EXPECT_FALSE(std::filesystem::exists(ws_ + "/a"));
  EXPECT_FALSE(std::filesystem::exists(ws_ + "/.moat"));
}

// Those of one depth are removed together, in batches (issue 15: each rmdir of a former mount
// point waits for a grace period); every one still goes, each after those inside it.
TEST_F(RemovePlaceholdersTest, ManyAtEveryDepthAllGo) {
  std::vector<Placeholder> ps;
  for (int i = 0; i < 40; ++i) {
    const std::string top = "p" + std::to_string(i);
    ps.push_back(made(top));
    ps.push_back(made(top + "/q"));
    ps.push_back(made(top + "/q/r"));
  }
  std::reverse(ps.begin(), ps.end());
  ASSERT_TRUE(remove_placeholders(ws_, ps));
  for (int i = 0; i < 40; ++i)
    EXPECT_FALSE(std::filesystem::exists(ws_ + "/p" + std::to_string(i))) << i;
}

TEST_F(RemovePlaceholdersTest, NonEmptyOrReplacedOnesStay) {
  Placeholder full = made("full");
  std::ofstream(ws_ + "/full/HEAD") << "x";
  Placeholder replaced = made("replaced");
  replaced.ino += 1;  // another directory of the same name
  ASSERT_TRUE(remove_placeholders(ws_, {full, replaced}));
  EXPECT_TRUE(std::filesystem::exists(ws_ + "/full/HEAD"));
  EXPECT_TRUE(std::filesystem::is_directory(ws_ + "/replaced"));
}

TEST_F(RemovePlaceholdersTest, SymlinkedParentIsNotFollowed) {
  std::string outside = ws_ + "-outside";
  std::filesystem::create_directories(outside + "/x");
  std::filesystem::create_directory_symlink(outside, ws_ + "/link");
  // Even with the right inode, a path through a symlink is not the placeholder's.
  ASSERT_TRUE(remove_placeholders(ws_, {recorded("link/x", outside + "/x")}));
  EXPECT_TRUE(std::filesystem::is_directory(outside + "/x"));
  std::filesystem::remove_all(outside);
}

TEST_F(RemovePlaceholdersTest, MissingOnesAreNotAnError) {
  Placeholder gone = made("gone");
  std::filesystem::remove(ws_ + "/gone");
  EXPECT_TRUE(remove_placeholders(ws_, {gone}));
}

// Issue 26 items 12 and 13: a changed path is named when it is, or lies below, a row of the
// host-executed table, at any depth; any .git component counts.
TEST(HostExecutedMatch, NamesTheRowAPathIsOrLiesBelowAtAnyDepth) {
  const auto pattern = [](std::string_view rel) {
    const HostExecutedPath* h = host_executed_match(rel);
    return h == nullptr ? std::string() : std::string(h->pattern);
  };
  EXPECT_EQ(pattern(".envrc"), "**/.envrc");
  EXPECT_EQ(pattern("sub/dir/.envrc"), "**/.envrc");
  EXPECT_EQ(pattern(".vscode/tasks.json"), "**/.vscode/tasks.json");
  EXPECT_EQ(pattern("a/.idea/workspace.xml"), "**/.idea");
  EXPECT_EQ(pattern(".devcontainer.json"), "**/.devcontainer.json");
  EXPECT_EQ(pattern(".devcontainer/devcontainer.json"), "**/.devcontainer");
  EXPECT_EQ(pattern("docs/.git/config"), "**/.git/config");
  EXPECT_EQ(pattern("docs/.git/hooks/pre-commit"), "**/.git/hooks");
  EXPECT_EQ(pattern("docs/.git/objects/ab/cdef"), "**/.git");
  EXPECT_EQ(pattern("lib/.git"), "**/.git");
  // Near names are not rows.
  for (const char* rel : {"a.envrc", ".envrc.example", ".vscode/extensions.json", "README.md",
                          "x.git/config", ".gitignore", "src/.github/workflows/ci.yml"})
    EXPECT_EQ(pattern(rel), "") << rel;
}

}  // namespace
}  // namespace moat::sandbox
