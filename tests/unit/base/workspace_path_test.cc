// tests/unit/base/workspace_path_test.cc: base/workspace_path.h, the one canonical name of a
// workspace and the one text a refused workspace gets.
#include "base/workspace_path.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <string>

#include "base/log.h"

namespace moat {
namespace {

namespace fs = std::filesystem;

class WorkspacePathTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "moat-wsp-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = fs::canonical(tmpl).string();
    fs::create_directories(dir_ + "/real/ws");
    fs::create_directory_symlink(dir_ + "/real", dir_ + "/link");
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string dir_;
};

TEST_F(WorkspacePathTest, ADirectoryReachedThroughASymlinkIsNamedByItsRealPath) {
  auto ws = canonical_workspace(dir_ + "/link/./ws/");
  ASSERT_TRUE(ws) << ws.error().message();
  EXPECT_EQ(*ws, dir_ + "/real/ws");
}

TEST_F(WorkspacePathTest, DotDotIsResolvedAfterTheSymlinkAsTheKernelWalksIt) {
  fs::create_directories(dir_ + "/other");
  fs::create_directory_symlink(dir_ + "/real/ws", dir_ + "/other/to-ws");
  auto ws = canonical_workspace(dir_ + "/other/to-ws/..");
  ASSERT_TRUE(ws) << ws.error().message();
  EXPECT_EQ(*ws, dir_ + "/real");
}

TEST_F(WorkspacePathTest, TheEmptyPathIsTheCurrentDirectory) {
  const fs::path before = fs::current_path();
  fs::current_path(dir_ + "/link/ws");
  auto empty = canonical_workspace("");
  auto dot = canonical_workspace(".");
  fs::current_path(before);
  ASSERT_TRUE(empty) << empty.error().message();
  EXPECT_EQ(*empty, dir_ + "/real/ws");
  ASSERT_TRUE(dot) << dot.error().message();
  EXPECT_EQ(*dot, dir_ + "/real/ws");
}

TEST_F(WorkspacePathTest, AMissingDirectoryIsRefusedWithEnoentNamingThePathAndWhy) {
  const std::string p = dir_ + "/missing";
  auto ws = canonical_workspace(p);
  ASSERT_FALSE(ws);
  EXPECT_EQ(ws.error().code, ENOENT);
  EXPECT_EQ(ws.error().message(),
            "workspace '" + p + "': cannot be resolved: No such file or directory");
}

TEST_F(WorkspacePathTest, AFileIsRefusedWithEnotdirNamingThePathAndWhy) {
  const std::string p = dir_ + "/real/file";
  std::ofstream(p) << "x";
  auto ws = canonical_workspace(p);
  ASSERT_FALSE(ws);
  EXPECT_EQ(ws.error().code, ENOTDIR);
  EXPECT_EQ(ws.error().message(), "workspace '" + p + "': not a directory: Not a directory");
}

TEST(WorkspaceRefused, QuotesThePathAndKeepsTheReasonAndItsErrno) {
  const std::string p = "/w/it's\n";
  const Error e = workspace_refused(p, Error{EPERM, "owned by uid 7"});
  EXPECT_EQ(e.code, EPERM);
  EXPECT_EQ(e.context, "workspace " + moat::quoted(p) + ": owned by uid 7");
  EXPECT_EQ(e.context.find('\n'), std::string::npos) << "untrusted text cannot break the line";
}

// Issue 27 item 20: the context was "realpath(<path>)", a bare syscall a person read in
// `moat run -C` and `--bind` errors; each caller names the path and its option.
TEST(RealPath, AMissingPathFailsWithEnoentAndNoSyscallName) {
  auto r = real_path("/nonexistent-moat-path/x");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ENOENT);
  EXPECT_EQ(r.error().context, "cannot be resolved");
}

}  // namespace
}  // namespace moat
