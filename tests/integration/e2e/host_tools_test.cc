// tests/integration/e2e/host_tools_test.cc: files that tools on the host run code from (git's
// config, hooks and gitlinks at any depth, direnv, editors) cannot be written from a sandbox
// that moatd builds with its default policy.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "e2e_support.h"

namespace moat::e2e {
namespace {

namespace fs = std::filesystem;

void put(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path) << text;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The workspace holds a nested repository (docs/.git), a submodule (lib/.git is a gitlink file
// into .git/modules/lib), and editor and direnv files; the code tries to plant a command in
// each. Everything the host would run stays as it was; ordinary repository files stay writable.
TEST(HostExecutedPaths, NestedRepositoriesSubmodulesAndEditorFilesStayAsTheyWere) {
  std::string why;
  if (!sandbox_available(&why)) GTEST_SKIP() << why;
  TempDir dir;
  const std::string ws = dir.path() + "/ws";
  const std::vector<std::string> guarded = {"docs/.git/config",
                                            "docs/.git/hooks/pre-commit",
                                            "docs/.git/info/attributes",
                                            "lib/.git",
                                            ".git/modules/lib/config",
                                            ".git/modules/lib/hooks/post-checkout",
                                            ".envrc",
                                            "web/.envrc",
                                            ".vscode/tasks.json",
                                            "web/.vscode/settings.json",
                                            ".idea/workspace.xml",
                                            ".git/worktrees/wt/commondir"};
  for (const auto& f : guarded) put(ws + "/" + f, "original\n");
  put(ws + "/docs/.git/HEAD", "ref: refs/heads/main\n");
  put(ws + "/docs/README.md", "docs\n");
  std::string script;
  for (const auto& f : guarded)
    script += "printf '[core]\\n\\tfsmonitor = touch /tmp/pwned\\n' > " + f + " 2>/dev/null; ";
  script +=
      "echo 'ref: refs/heads/x' > docs/.git/HEAD; echo changed > docs/README.md; "
      "rm -f lib/.git 2>/dev/null; true";
  auto r = run({moat_bin(), "sandbox", "exec", "-C", ws, "--audit-dir", dir.path() + "/audit", "--",
                "sh", "-c", script},
               {"XDG_STATE_HOME=" + dir.path() + "/state",
                "XDG_CONFIG_HOME=" + dir.path() + "/config", "MOATD_BIN=" + moatd_bin()});
  ASSERT_EQ(r.exit_code, 0) << r.out;
  for (const auto& f : guarded) EXPECT_EQ(slurp(ws + "/" + f), "original\n") << f;
  EXPECT_EQ(slurp(ws + "/docs/.git/HEAD"), "ref: refs/heads/x\n")
      << "a .git directory stays writable";
  EXPECT_EQ(slurp(ws + "/docs/README.md"), "changed\n");
}

}  // namespace
}  // namespace moat::e2e
