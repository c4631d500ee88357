// tests/integration/e2e/mcp_cli_test.cc: `moat mcp list` and `moat mcp test NAME` (issue 29
// item 6) with the pinned reference servers: every layer's declarations with their source, a
// repository's shown but not run until trusted, and a server started in a sandbox through moatd
// with its tools and the decision each would get.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "e2e_support.h"
#include "workspace_test.h"

namespace moat::e2e {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string servers_root() { return env_or("MOAT_BUILD_ROOT", "build") + "/mcp-servers"; }
std::string everything_js() {
  return servers_root() + "/node_modules/@modelcontextprotocol/server-everything/dist/index.js";
}

class McpCliTest : public WorkspaceTest {
 protected:
  void SetUp() override {
    WorkspaceTest::SetUp();
    if (IsSkipped()) return;
    fs::create_directories(dir_.path() + "/system");
    fs::create_directories(dir_.path() + "/user");
  }
  void skip_without_servers() {
    if (::access("/usr/bin/node", X_OK) != 0) GTEST_SKIP() << "node is not installed";
    if (!fs::exists(everything_js()))
      GTEST_SKIP() << "the MCP reference servers are not installed in " << servers_root()
                   << " (scripts/lib.sh moat_install_mcp_servers needs npm)";
  }
  // The user layer: a server "everything" (bound read-only from the build tree unless
  // `with_read` is false) and `rules`.
  std::string user_layer(bool with_read = true, const std::string& rules = "") {
    const std::string file = dir_.path() + "/user/mcp.toml";
    std::ofstream(file) << "schema = 1\n\n[[mcp.server]]\nname = \"everything\"\ncommand = "
                           "[\"node\", \""
                        << everything_js() << "\", \"stdio\"]\n"
                        << (with_read ? "read = [\"" + servers_root() + "\"]\n" : "") << rules;
    return file;
  }
  SplitRun mcp(const std::vector<std::string>& words) {
    std::vector<std::string> argv = {moat_bin(), "mcp"};
    argv.insert(argv.end(), words.begin(), words.end());
    const std::vector<std::string> flags = {
        "--system-policy-dir", dir_.path() + "/system", "--user-policy-dir", dir_.path() + "/user",
        "--audit-dir",         dir_.path() + "/audit",  "-C",                ws_};
    argv.insert(argv.end(), flags.begin(), flags.end());
    return run_split(argv, env(), 120);
  }
  static json server_named(const json& out, const std::string& name) {
    for (const auto& s : out.value("servers", json::array()))
      if (s.value("name", "") == name) return s;
    return nullptr;
  }
};

TEST_F(McpCliTest, ListShowsEachLayersServerWithItsSourceAndARepositorysAsNotRunUntilTrusted) {
  const std::string file = user_layer();
  std::ofstream(ws_ + "/.mcp.json")
      << R"({"mcpServers": {"repo-tool": {"command": "node", "args": ["tool.js"]}}})";
  const SplitRun r = mcp({"list", "--no-start", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json out = json::parse(r.out, nullptr, false);
  const json user = server_named(out, "everything");
  ASSERT_TRUE(user.is_object()) << r.out;
  EXPECT_EQ(user.value("layer", ""), "user");
  EXPECT_TRUE(user.value("trusted", false));
  EXPECT_EQ(user.value("source", ""), file + ":3");
  EXPECT_FALSE(user.contains("tools")) << "--no-start starts nothing";
  const json repo = server_named(out, "repo-tool");
  ASSERT_TRUE(repo.is_object()) << r.out << r.err;
  EXPECT_EQ(repo.value("layer", ""), "project");
  EXPECT_FALSE(repo.value("trusted", true));
  EXPECT_NE(repo.value("skipped", "").find("trust"), std::string::npos) << repo.dump();
  EXPECT_EQ(repo.value("command", json()), json::array({"node", "tool.js"}));
}

TEST_F(McpCliTest, TestStartsTheServerInASandboxAndListsItsToolsWithTheDecisionEachGets) {
  skip_without_servers();
  user_layer(true,
             "\n[[tool]]\nid = \"user.no-env\"\ndecision = \"deny\"\ntool = "
             "\"mcp:everything:get-env\"\n\n[[tool]]\nid = \"user.echo\"\ndecision = "
             "\"allow\"\ntool = \"mcp:everything:echo\"\n");
  const SplitRun r = mcp({"test", "everything", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const json s = server_named(json::parse(r.out, nullptr, false), "everything");
  ASSERT_TRUE(s.is_object()) << r.out;
  EXPECT_TRUE(s.value("started", false)) << s.dump();
  json by_name = json::object();
  for (const auto& t : s.value("tools", json::array())) by_name[t.value("name", "")] = t;
  ASSERT_TRUE(by_name.contains("echo")) << s.dump();
  EXPECT_EQ(by_name["echo"].value("model_name", ""), "mcp__everything__echo");
  EXPECT_EQ(by_name["echo"].value("decision", ""), "allow");
  EXPECT_EQ(by_name["echo"].value("rule", ""), "user.echo");
  ASSERT_TRUE(by_name.contains("get-env")) << s.dump();
  EXPECT_EQ(by_name["get-env"].value("decision", ""), "deny");
  // The session it ran in is in the audit log: the server's exec, judged and recorded.
  EXPECT_TRUE(fs::exists(dir_.path() + "/audit")) << r.err;
}

TEST_F(McpCliTest, TestOfAServerThatCannotStartExitsOneNamingTheServer) {
  skip_without_servers();
  user_layer(/*with_read=*/false);  // its install is not bound: node cannot find it inside
  const SplitRun r = mcp({"test", "everything"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("did not start: mcp server everything"), std::string::npos) << r.out;
  const SplitRun none = mcp({"test", "nosuch"});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("no layer declares a server named 'nosuch'"), std::string::npos)
      << none.err;
}

}  // namespace
}  // namespace moat::e2e
