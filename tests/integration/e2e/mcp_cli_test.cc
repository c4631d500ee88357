// tests/integration/e2e/mcp_cli_test.cc: `moat mcp list` and `moat mcp test NAME` (issue 29
// item 6) with the pinned reference servers: every layer's declarations with their source, a
// repository's shown but not run until trusted, and a server started in a sandbox through moatd
// with its tools and the decision each would get; a url server reached through the session's
// proxy under the [[network]] rules; the person's variables only for a trusted layer's server.
#include <gtest/gtest.h>
#include <signal.h>
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
  SplitRun mcp(const std::vector<std::string>& words,
               const std::vector<std::string>& more_env = {}) {
    std::vector<std::string> argv = {moat_bin(), "mcp"};
    argv.insert(argv.end(), words.begin(), words.end());
    const std::vector<std::string> flags = {
        "--system-policy-dir", dir_.path() + "/system", "--user-policy-dir", dir_.path() + "/user",
        "--audit-dir",         dir_.path() + "/audit",  "-C",                ws_};
    argv.insert(argv.end(), flags.begin(), flags.end());
    std::vector<std::string> e = env();
    e.insert(e.end(), more_env.begin(), more_env.end());
    return run_split(argv, e, 120);
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

// --call: the test server's env tool lists its environment's names. The person's variable
// reaches the server a user layer declares with `env`; a --policy file's server naming the
// same variable, and a pinned repository's .mcp.json server setting it, get none of it
// (policy::takes_person_env).
TEST_F(McpCliTest, TestPassesAUserLayersServerItsVariablesAndOtherLayersServersNone) {
  const std::string bin = copy_mcp_test_server(ws_ + "/tools");
  const std::string declare =
      "[[mcp.server]]\ncommand = [\"" + bin + "\"]\nenv = [\"MOAT_T_SECRET\"]\n";
  std::ofstream(dir_.path() + "/user/mcp.toml")
      << "schema = 1\n\n" << declare << "name = \"mine\"\n\n[[tool]]\nid = \"user.env\"\n"
      << "decision = \"allow\"\ntool = [\"mcp:mine:env\", \"mcp:cli:env\", \"mcp:repo:env\"]\n";
  const std::string cli_file = dir_.path() + "/cli.toml";
  std::ofstream(cli_file) << "schema = 1\n\n" << declare << "name = \"cli\"\n";
  std::ofstream(ws_ + "/.mcp.json") << json{{"mcpServers",
                                              {{"repo",
                                                {{"command", bin},
                                                 {"args", json::array()},
                                                 {"env", {{"MOAT_T_SECRET", "from-repo"}}}}}}}}
                                           .dump();
  const e2e::Run pinned = run({moat_bin(), "policy", "trust", "--workspace", ws_}, env(), 30);
  ASSERT_EQ(pinned.exit_code, 0) << pinned.out;
  auto env_names = [&](const std::string& server) {
    const SplitRun r = mcp({"test", server, "--call", "env", "--json", "--policy", cli_file},
                           {"MOAT_T_SECRET=s3cret"});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    const json s = server_named(json::parse(r.out, nullptr, false), server);
    const json call = s.is_object() ? s.value("call", json::object()) : json::object();
    EXPECT_FALSE(call.value("/result/isError"_json_pointer, true)) << r.out << r.err;
    return call.value("/result/content/0/text"_json_pointer, std::string());
  };
  EXPECT_NE(env_names("mine").find("\"MOAT_T_SECRET\""), std::string::npos);
  for (const std::string other : {"cli", "repo"}) {
    const std::string names = env_names(other);
    EXPECT_NE(names.find("\"HOME\""), std::string::npos) << other << ": " << names;
    EXPECT_EQ(names.find("MOAT_T_SECRET"), std::string::npos) << other << " got it: " << names;
  }
}

// A1 (A-1): --call on a stdio server runs one of its tools in the session: like a url server's
// (and a model's call in moat run), moatd decides it and its audit log holds the decision and
// an mcp.call record; a tool the policy denies is refused there and never reaches the server.
TEST_F(McpCliTest, ACallOnAStdioServerIsDecidedAndRecordedInTheSessionsAuditLog) {
  const std::string bin = copy_mcp_test_server(ws_ + "/tools");
  std::ofstream(dir_.path() + "/user/mcp.toml")
      << "schema = 1\n\n[[mcp.server]]\nname = \"mine\"\ncommand = [\"" << bin << "\"]\n\n"
      << "[[tool]]\nid = \"user.env\"\ndecision = \"allow\"\ntool = \"mcp:mine:env\"\n";
  const SplitRun r = mcp({"test", "mine", "--call", "env", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  std::vector<json> records;
  for (const auto& e : fs::recursive_directory_iterator(dir_.path() + "/audit"))
    if (e.path().extension() == ".jsonl")
      for (json& j : records_of(e.path().string())) records.push_back(std::move(j));
  const auto calls = of_type(records, "mcp.call");
  ASSERT_EQ(calls.size(), 1u) << r.out << r.err;
  EXPECT_EQ(calls[0].value("tool", ""), "mcp__mine__env");
  EXPECT_EQ(calls[0].value("server", ""), "mine");
  bool decided = false;
  for (const json& d : of_type(records, "decision"))
    decided |= d.value("decision_id", "") == calls[0].value("decision_id", "x") &&
               d.value("result", "") == "allow";
  EXPECT_TRUE(decided) << "no allow decision record before the mcp.call";
}

// A url server (issue 29 point 1): server-everything in its Streamable HTTP mode on the host's
// 127.0.0.1; `moat mcp test|list` reach it as a session does, through the private moatd's
// session proxy under the user layer's [[network]] rules.
class McpCliUrlTest : public McpCliTest {
 protected:
  void SetUp() override {
    McpCliTest::SetUp();
    if (IsSkipped()) return;
    skip_without_servers();
    if (IsSkipped()) return;
    port_ = free_loopback_port();
    server_ = start({"/usr/bin/node", everything_js(), "streamableHttp"},
                    dir_.path() + "/server.log", {"PORT=" + std::to_string(port_)});
    ASSERT_TRUE(eventually([&] { return listening_on_loopback(port_); }))
        << read_file(dir_.path() + "/server.log");
  }
  void TearDown() override {
    if (server_ > 0) {
      ::kill(server_, SIGKILL);
      wait_exit(server_, 10);
    }
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/mcp"; }
  // The user layer: the server "web" at url(), its echo allowed, and a [[network]] rule
  // "web-net" deciding `network` for 127.0.0.1 at its port.
  void user_layer_with(const std::string& network) {
    std::ofstream(dir_.path() + "/user/mcp.toml")
        << "schema = 1\n\n[[mcp.server]]\nname = \"web\"\nurl = \"" << url()
        << "\"\n\n[[tool]]\nid = \"user.echo\"\ndecision = \"allow\"\ntool = \"mcp:web:echo\"\n\n"
        << "[[network]]\nid = \"web-net\"\ndecision = \"" << network
        << "\"\ndomains = [\"127.0.0.1\"]\nports = [" << port_ << "]\n";
  }
  pid_t server_ = -1;
  int port_ = 0;
};

TEST_F(McpCliUrlTest, TestAndListReachAUrlServerThroughTheProxyNamingItsDecisionAndTheTools) {
  user_layer_with("allow");
  const SplitRun r =
      mcp({"test", "web", "--json", "--call", "echo", "--args", R"({"message": "via proxy"})"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const json s = server_named(json::parse(r.out, nullptr, false), "web");
  EXPECT_EQ(s.value("url", ""), url()) << r.out;
  EXPECT_TRUE(s.value("started", false)) << r.out;
  const json proxy = {{"host", "127.0.0.1"}, {"port", port_}, {"decision", "allow"},
                      {"rule", "web-net"}};
  EXPECT_EQ(s.value("proxy", json()), proxy) << r.out;
  json echo;
  for (const auto& t : s.value("tools", json::array()))
    if (t.value("name", "") == "echo") echo = t;
  EXPECT_EQ(echo.value("model_name", ""), "mcp__web__echo") << r.out;
  EXPECT_EQ(echo.value("decision", ""), "allow") << r.out;
  EXPECT_NE(s.value("/call/result/content/0/text"_json_pointer, std::string()).find("via proxy"),
            std::string::npos)
      << r.out;

  const SplitRun text = mcp({"list"});
  ASSERT_EQ(text.exit_code, 0) << text.out << text.err;
  EXPECT_NE(text.out.find(url()), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("proxy: allow 127.0.0.1:" + std::to_string(port_) + " (rule web-net)"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("allow mcp__web__echo"), std::string::npos) << text.out;
}

// An `ask` [[network]] rule for the server's host: `moat mcp test` asks nobody (its session is
// headless), so the proxy refuses the connection and the server does not start; the error names
// the server and the rule.
TEST_F(McpCliUrlTest, AnAskNetworkRuleRefusesAUrlServerHeadlessNamingTheServerAndTheRule) {
  user_layer_with("ask");
  const SplitRun r = mcp({"test", "web", "--json"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  const json s = server_named(json::parse(r.out, nullptr, false), "web");
  EXPECT_FALSE(s.value("started", true)) << r.out;
  const std::string error = s.value("error", "");
  EXPECT_NE(error.find("mcp server web"), std::string::npos) << r.out;
  EXPECT_NE(error.find("web-net"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace moat::e2e
