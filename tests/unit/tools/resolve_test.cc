// tests/unit/tools/resolve_test.cc: canonicalisation inside the root, and the refusal to
// follow a symlink that appears after the check.
#include "tools/resolve.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "tests/unit/tools/harness.h"

namespace moat::tools {
namespace {

class ResolveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ws_ = std::filesystem::canonical(testing::make_workspace_dir()).string();
    std::filesystem::create_directories(ws_ + "/real/sub");
  }
  void TearDown() override { std::filesystem::remove_all(ws_); }
  std::string ws_;
};

TEST_F(ResolveTest, RelativePathsResolveAgainstTheCwd) {
  auto r = resolve_in_root("real/./sub/..", ws_);
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->path, ws_ + "/real");
  EXPECT_TRUE(r->exists);
  EXPECT_TRUE(r->is_dir);
}

TEST_F(ResolveTest, AMissingFileIsItsCanonicalParentPlusItsName) {
  ASSERT_EQ(::symlink("real", (ws_ + "/alias").c_str()), 0);
  auto a = resolve_in_root("alias/new/deeper.txt", ws_);
  auto b = resolve_in_root(ws_ + "/real/new/deeper.txt", "/");
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->path, ws_ + "/real/new/deeper.txt");
  EXPECT_EQ(a->path, b->path);
  EXPECT_FALSE(a->exists);
}

TEST_F(ResolveTest, AFileInTheMiddleIsNotADirectory) {
  ASSERT_EQ(::close(::open((ws_ + "/file").c_str(), O_CREAT | O_WRONLY, 0600)), 0);
  auto r = resolve_in_root("file/x", ws_);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ENOTDIR);
}

TEST_F(ResolveTest, DotDotAfterAMissingDirectoryFailsWithEinval) {
  auto r = resolve_in_root("missing/../x", ws_);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, EINVAL);
}

TEST_F(ResolveTest, EmptyPathFailsWithEnoent) {
  auto r = resolve_in_root("", ws_);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ENOENT);
}

TEST_F(ResolveTest, OpenCanonicalRefusesASymlinkPlantedAfterTheCheck) {
  auto r = resolve_in_root("real/sub", ws_);
  ASSERT_TRUE(r);
  // The sandboxed code swaps the directory for a symlink to somewhere else.
  std::filesystem::rename(ws_ + "/real", ws_ + "/moved");
  ASSERT_EQ(::symlink("moved", (ws_ + "/real").c_str()), 0);
  auto fd = open_canonical(r->path, O_PATH);
  ASSERT_FALSE(fd);
  EXPECT_EQ(fd.error().code, ELOOP);
}

}  // namespace
}  // namespace moat::tools
