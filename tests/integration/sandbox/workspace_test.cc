// tests/integration/sandbox/workspace_test.cc: a session is built from the workspace directory
// it was given as an fd, never from the path again (issue 12, item 1), as root and rootless.
#include <fcntl.h>
#include <unistd.h>

#include <filesystem>

#include "sandbox/workspace.h"
#include "tests/integration/sandbox/test_util.h"

namespace moat::sandbox {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

// Opened, then the path is swapped for a symlink to another directory before the session is
// created: the session still runs on the directory that was opened and checked.
TEST(SessionWorkspace, ASwapAfterTheCheckDoesNotChangeTheDirectoryTheSessionUses) {
  TempDir dir;
  const std::string base = fs::canonical(dir.path()).string();
  const std::string ws = base + "/ws";
  dir.write("ws/MINE", "checked\n");
  dir.write("other/THEIRS", "not checked\n");
  auto opened = open_workspace(ws, std::nullopt);
  ASSERT_TRUE(opened) << opened.error().message();
  fs::rename(ws, base + "/moved");
  fs::create_directory_symlink(base + "/other", ws);
  SessionConfig c;
  c.workspace = ws;
  c.workspace_fd = opened->fd.get();
  MOAT_SESSION_OR_SKIP(s, c);
  auto r = testing::sh(s, "cat MINE; ls; echo written > NEW");
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->outcome.exit_code, 0) << r->output;
  EXPECT_EQ(r->output, "checked\nMINE\n");
  EXPECT_TRUE(fs::exists(base + "/moved/NEW")) << "the write landed in the checked directory";
  EXPECT_FALSE(fs::exists(base + "/other/NEW"));
}

// Without an fd, Session::create opens the path itself the same way: a symlink anywhere on it
// is refused, not resolved (the pre-fix code resolved it with realpath, twice).
TEST(SessionWorkspace, APathThroughASymlinkIsRefusedNotResolved) {
  TempDir dir;
  const std::string base = fs::canonical(dir.path()).string();
  dir.write("real/ws/MINE", "x\n");
  fs::create_directory_symlink(base + "/real", base + "/link");
  SessionConfig c;
  c.workspace = base + "/link/ws";
  auto s = Session::create(c);
  ASSERT_FALSE(s) << "a session was made over a path with a symlink in it";
  EXPECT_EQ(s.error().code, ELOOP) << s.error().message();
}

}  // namespace
}  // namespace moat::sandbox
