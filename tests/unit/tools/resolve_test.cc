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

// Every case runs with openat2 and with the per-component openat equivalent that the
// sandbox's seccomp filter (openat2 -> ENOSYS) makes the handler use.
class ResolveTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    set_openat2_enabled_for_testing(GetParam());
    ws_ = std::filesystem::canonical(testing::make_workspace_dir()).string();
    std::filesystem::create_directories(ws_ + "/real/sub");
  }
  void TearDown() override {
    set_openat2_enabled_for_testing(true);
    std::filesystem::remove_all(ws_);
  }
  std::string ws_;
};

TEST_P(ResolveTest, RelativePathsResolveAgainstTheCwd) {
  auto r = resolve_in_root("real/./sub/..", ws_);
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->path, ws_ + "/real");
  EXPECT_TRUE(r->exists);
  EXPECT_TRUE(r->is_dir);
}

TEST_P(ResolveTest, AMissingFileIsItsCanonicalParentPlusItsName) {
  ASSERT_EQ(::symlink("real", (ws_ + "/alias").c_str()), 0);
  auto a = resolve_in_root("alias/new/deeper.txt", ws_);
  auto b = resolve_in_root(ws_ + "/real/new/deeper.txt", "/");
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->path, ws_ + "/real/new/deeper.txt");
  EXPECT_EQ(a->path, b->path);
  EXPECT_FALSE(a->exists);
}

TEST_P(ResolveTest, AFileInTheMiddleIsNotADirectory) {
  ASSERT_EQ(::close(::open((ws_ + "/file").c_str(), O_CREAT | O_WRONLY, 0600)), 0);
  auto r = resolve_in_root("file/x", ws_);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ENOTDIR);
}

TEST_P(ResolveTest, DotDotAfterAMissingDirectoryFailsWithEinval) {
  auto r = resolve_in_root("missing/../x", ws_);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, EINVAL);
}

TEST_P(ResolveTest, EmptyPathFailsWithEnoent) {
  auto r = resolve_in_root("", ws_);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ENOENT);
}

TEST_P(ResolveTest, OpenCanonicalRefusesASymlinkPlantedAfterTheCheck) {
  auto r = resolve_in_root("real/sub", ws_);
  ASSERT_TRUE(r);
  // The sandboxed code swaps the directory for a symlink to somewhere else.
  std::filesystem::rename(ws_ + "/real", ws_ + "/moved");
  ASSERT_EQ(::symlink("moved", (ws_ + "/real").c_str()), 0);
  auto fd = open_canonical(r->path, O_PATH);
  ASSERT_FALSE(fd);
  EXPECT_EQ(fd.error().code, ELOOP);
}

TEST_P(ResolveTest, OpenCanonicalOpensARealPath) {
  auto fd = open_canonical(ws_ + "/real/sub", O_RDONLY | O_DIRECTORY);
  ASSERT_TRUE(fd) << fd.error().message();
  auto p = fd_path(fd->get());
  ASSERT_TRUE(p);
  EXPECT_EQ(*p, ws_ + "/real/sub");
}

TEST_P(ResolveTest, OpenCanonicalRefusesAFinalSymlink) {
  ASSERT_EQ(::symlink("real", (ws_ + "/alias").c_str()), 0);
  auto fd = open_canonical(ws_ + "/alias", O_PATH);
  ASSERT_FALSE(fd);
  EXPECT_EQ(fd.error().code, ELOOP);
}

INSTANTIATE_TEST_SUITE_P(Openat2AndFallback, ResolveTest, ::testing::Bool(), [](const auto& info) {
  return info.param ? "Openat2" : "OpenatPerComponent";
});

}  // namespace
}  // namespace moat::tools
