// tests/unit/sandbox/workspace_test.cc: open_workspace resolves a workspace once, following no
// symlink at any component, checks type and owner on the fd it returns, and refuses in the one
// workspace text.
#include "sandbox/workspace.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>

#include "base/workspace_path.h"

namespace moat::sandbox {
namespace {

namespace fs = std::filesystem;

class WorkspaceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "moat-ws-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    // The fixture's own path must have no symlink in it, or every case would be ELOOP.
    dir_ = fs::canonical(tmpl).string();
    fs::create_directories(dir_ + "/real/ws");
  }
  void TearDown() override { fs::remove_all(dir_); }
  int code_of(const std::string& path, std::optional<uid_t> owner = std::nullopt) {
    auto w = open_workspace(path, owner);
    return w ? 0 : w.error().code;
  }
  std::string dir_;
};

TEST_F(WorkspaceTest, ARealDirectoryOpensAndKeepsItsPath) {
  auto w = open_workspace(dir_ + "/real/ws", getuid());
  ASSERT_TRUE(w) << w.error().message();
  EXPECT_EQ(w->path, dir_ + "/real/ws");
  EXPECT_EQ(w->uid, getuid());
  struct stat by_fd {
  }, by_path{};
  ASSERT_EQ(fstat(w->fd.get(), &by_fd), 0);
  ASSERT_EQ(stat((dir_ + "/real/ws").c_str(), &by_path), 0);
  EXPECT_EQ(by_fd.st_ino, by_path.st_ino);
}

TEST_F(WorkspaceTest, ASymlinkAsTheLastComponentIsRefusedWithEloop) {
  fs::create_directory_symlink(dir_ + "/real/ws", dir_ + "/link");
  EXPECT_EQ(code_of(dir_ + "/link"), ELOOP);
}

TEST_F(WorkspaceTest, ASymlinkInTheMiddleIsRefusedWithEloop) {
  fs::create_directory_symlink(dir_ + "/real", dir_ + "/mid");
  EXPECT_EQ(code_of(dir_ + "/mid/ws"), ELOOP);
}

TEST_F(WorkspaceTest, PathsTheKernelWouldWalkDifferentlyFromTheTextAreRefusedWithEinval) {
  for (const std::string& p : {std::string("relative/ws"), dir_ + "/real/ws/", dir_ + "//real/ws",
                               dir_ + "/real/./ws", dir_ + "/real/ws/../ws", std::string("/"),
                               std::string(""), dir_ + "/real/ws" + std::string(1, '\0') + "x"}) {
    SCOPED_TRACE(p);
    EXPECT_EQ(code_of(p), EINVAL);
  }
}

TEST_F(WorkspaceTest, ARefusalNamesThePathAndWhyInTheOneWorkspaceText) {
  fs::create_directory_symlink(dir_ + "/real/ws", dir_ + "/link");
  auto w = open_workspace(dir_ + "/link", std::nullopt);
  ASSERT_FALSE(w);
  EXPECT_EQ(w.error().code, ELOOP);
  EXPECT_EQ(w.error().message(), "workspace '" + dir_ +
                                     "/link': a component is a symlink: name the directory by its "
                                     "real path: Too many levels of symbolic links");
}

// moat sends the name canonical_workspace gives (base/workspace_path.h); moatd opens that.
TEST_F(WorkspaceTest, TheNameCanonicalWorkspaceGivesOpens) {
  fs::create_directory_symlink(dir_ + "/real", dir_ + "/mid");
  auto name = canonical_workspace(dir_ + "/mid/ws/.");
  ASSERT_TRUE(name) << name.error().message();
  auto w = open_workspace(*name, getuid());
  ASSERT_TRUE(w) << w.error().message();
  EXPECT_EQ(w->path, dir_ + "/real/ws");
}

TEST_F(WorkspaceTest, AFileIsRefusedWithEnotdir) {
  std::ofstream(dir_ + "/real/file") << "x";
  EXPECT_EQ(code_of(dir_ + "/real/file"), ENOTDIR);
}

TEST_F(WorkspaceTest, ADirectoryOfAnotherOwnerIsRefusedWithEperm) {
  EXPECT_EQ(code_of(dir_ + "/real/ws", getuid() + 1), EPERM);
  EXPECT_EQ(code_of(dir_ + "/real/ws", getuid()), 0);
}

// The property the session relies on: once opened, swapping the path for a symlink to another
// directory (what the race of issue 12 item 1 does) does not change what the fd names.
TEST_F(WorkspaceTest, ASwapAfterOpeningLeavesTheFdOnTheCheckedDirectory) {
  std::ofstream(dir_ + "/real/ws/MINE") << "x";
  fs::create_directories(dir_ + "/other");
  std::ofstream(dir_ + "/other/THEIRS") << "x";
  auto w = open_workspace(dir_ + "/real/ws", getuid());
  ASSERT_TRUE(w) << w.error().message();
  fs::rename(dir_ + "/real/ws", dir_ + "/real/moved");
  fs::create_directory_symlink(dir_ + "/other", dir_ + "/real/ws");
  struct stat st {};
  EXPECT_EQ(fstatat(w->fd.get(), "MINE", &st, 0), 0);
  EXPECT_NE(fstatat(w->fd.get(), "THEIRS", &st, 0), 0);
  EXPECT_EQ(code_of(dir_ + "/real/ws"), ELOOP) << "the swapped path is refused when opened again";
}

}  // namespace
}  // namespace moat::sandbox
