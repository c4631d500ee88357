// tests/unit/policy/paths_test.cc: PathCache gives canonical_path's answers (symlinks,
// missing tails, a file used as a directory) while walking fewer components, and a new
// cache sees a symlink swapped in after an earlier decision; workspace_root names a workspace
// as moat and moatd do.
#include <gtest/gtest.h>

#include <filesystem>

#include "base/workspace_path.h"
#include "policy/paths.h"
#include "tests/unit/policy/policy_fixture.h"

namespace moat::policy {
namespace {

using testing::make_temp_dir;
using testing::write_file;
namespace fs = std::filesystem;

class PathCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(ws_ + "/src/deep");
    fs::create_directories(root_ + "/elsewhere/sub");
    write_file(ws_ + "/src/a.py", "x\n");
    fs::create_symlink(root_ + "/elsewhere", ws_ + "/link");
    fs::create_symlink("../src", ws_ + "/src/deep/up");
    fs::create_symlink("missing-target", ws_ + "/dangling");
  }
  void TearDown() override { fs::remove_all(root_); }

  const std::string root_ = make_temp_dir();
  const std::string ws_ = root_ + "/ws";
};

TEST_F(PathCacheTest, AgreesWithCanonicalPathOnEveryShapeOfPath) {
  const char* const kPaths[] = {".",
                                "src",
                                "src/a.py",
                                "src/new.py",
                                "src/a.py/below",
                                "new/dir/file",
                                "link",
                                "link/sub",
                                "link/sub/new",
                                "src/deep/up/a.py",
                                "src/deep/up/../a.py",
                                "dangling",
                                "dangling/x",
                                "../ws/src",
                                "/",
                                "/dev/stdout",
                                "/proc/self/fd/1",
                                "//src///a.py",
                                "src/./deep/.."};
  PathCache cache(&ws_);
  for (const char* p : kPaths) {
    SCOPED_TRACE(p);
    EXPECT_EQ(cache.canonical(p, ws_), canonical_path(p, ws_));
  }
  PathCache without_root;
  for (const char* p : kPaths)
    EXPECT_EQ(without_root.canonical(p, ws_), canonical_path(p, ws_)) << p;
}

TEST_F(PathCacheTest, ANewCacheSeesASymlinkSwappedInAfterAnEarlierDecision) {
  PathCache first(&ws_);
  EXPECT_EQ(first.canonical("src/deep/x", ws_), ws_ + "/src/deep/x");
  fs::remove_all(ws_ + "/src/deep");
  fs::create_symlink(root_ + "/elsewhere", ws_ + "/src/deep");
  PathCache second(&ws_);
  EXPECT_EQ(second.canonical("src/deep/x", ws_), root_ + "/elsewhere/x");
}

TEST_F(PathCacheTest, AWorkspaceIsRootedAtTheNameMoatGivesItWhenItIsADirectory) {
  for (const std::string& p : {ws_, ws_ + "/link/..", ws_ + "/link/sub/..", ws_ + "/src/deep/.."}) {
    SCOPED_TRACE(p);
    auto canonical = canonical_workspace(p);
    ASSERT_TRUE(canonical) << canonical.error().message();
    EXPECT_EQ(workspace_root(p), *canonical);
  }
  EXPECT_EQ(workspace_root(ws_ + "/link"), root_ + "/elsewhere");
}

TEST_F(PathCacheTest, AWorkspaceNotThereYetIsRootedWhereCanonicalPathPutsIt) {
  for (const std::string& p : {root_ + "/not/yet/../there", ws_ + "/link/new", ws_ + "/src/a.py"}) {
    SCOPED_TRACE(p);
    EXPECT_EQ(workspace_root(p), canonical_path(p, "/"));
  }
}

}  // namespace
}  // namespace moat::policy
