// tests/integration/e2e/mcp_docs_test.cc: docs/mcp.md's examples are checked (issue 29): each
// TOML block it shows is text of examples/policies/mcp.toml, and `moat policy test` passes every
// rule test of that file loaded as a user layer.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "base/shell_words.h"
#include "e2e_support.h"

namespace moat::e2e {
namespace {

namespace fs = std::filesystem;

// The bodies of the ```toml blocks of a Markdown text.
std::vector<std::string> toml_blocks(const std::string& md) {
  std::vector<std::string> out;
  const std::string open = "```toml\n", close = "```\n";
  for (std::size_t at = md.find(open); at != std::string::npos; at = md.find(open, at)) {
    at += open.size();
    const std::size_t end = md.find(close, at);
    if (end == std::string::npos) break;
    out.push_back(md.substr(at, end - at));
    at = end + close.size();
  }
  return out;
}

TEST(McpDocsTest, EveryTomlExampleOfTheMcpPageIsInTheCheckedExampleFile) {
  const std::string md = read_file(source_root() + "/docs/mcp.md");
  const std::string example = read_file(source_root() + "/examples/policies/mcp.toml");
  ASSERT_FALSE(example.empty());
  const auto blocks = toml_blocks(md);
  EXPECT_GE(blocks.size(), 3u) << "docs/mcp.md shows a server and two rules";
  for (const auto& b : blocks)
    EXPECT_NE(example.find(b), std::string::npos)
        << "docs/mcp.md shows TOML that examples/policies/mcp.toml does not hold:\n" << b;
}

// `moat policy test` over a user layer of `files` (none: empty), with no system layer: its output.
SplitRun policy_test(const TempDir& dir, const std::vector<std::string>& files) {
  const std::string user = dir.path() + "/user" + std::to_string(files.size());
  fs::create_directories(dir.path() + "/system");
  fs::create_directories(user);
  for (const auto& f : files) fs::copy_file(f, user + "/" + fs::path(f).filename().string());
  return run_split({moat_bin(), "policy", "test", "--system-policy-dir", dir.path() + "/system",
                    "--user-policy-dir", user, "-C", dir.path()},
                   // The test's own HOME: under /tmp (uid 65534's in CI) the default policy's
                   // ~/.bashrc test skips, naming the home (policy/lint.cc), and fails nothing.
                   {"XDG_STATE_HOME=" + dir.path() + "/state"}, 60);
}

// "N passed, ..." -> N; -1 when the summary is missing.
int passed(const std::string& out) {
  const std::size_t at = out.rfind(" passed, ");
  if (at == std::string::npos) return -1;
  const std::size_t line = out.rfind('\n', at);
  return std::atoi(out.c_str() + (line == std::string::npos ? 0 : line + 1));
}

TEST(McpDocsTest, PolicyTestPassesEveryRuleTestOfTheExampleFile) {
  TempDir dir;
  const SplitRun base = policy_test(dir, {});
  const SplitRun r = policy_test(dir, {source_root() + "/examples/policies/mcp.toml"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find(" passed, 0 failed"), std::string::npos) << r.out << r.err;
  // Its rules' tests ran and passed, beside the default policy's (which skip programs this
  // host lacks).
  EXPECT_GT(passed(r.out), passed(base.out)) << base.out << r.out;
}

}  // namespace
}  // namespace moat::e2e
