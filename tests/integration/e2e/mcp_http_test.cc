// tests/integration/e2e/mcp_http_test.cc: an MCP server declared with a `url` (issue 29 point
// 1, sandbox/mcp_url.h): the pinned reference server `server-everything` runs on the host's
// 127.0.0.1 in its Streamable HTTP and its older HTTP+SSE mode (a remote server, as moatd sees
// it); the real moatd reaches it through the session's proxy, only when a [[network]] rule
// names 127.0.0.1 and its port, and each connection is a `net` record naming the server.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "e2e_support.h"
#include "moatd_fixture.h"

namespace moat::e2e {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

std::string everything_js() {
  return env_or("MOAT_BUILD_ROOT", "build") +
         "/mcp-servers/node_modules/@modelcontextprotocol/server-everything/dist/index.js";
}

class McpHttpTest : public MoatdProcess {
 protected:
  void SetUp() override {
    std::string why;
    if (!sandbox_available(&why)) GTEST_SKIP() << why;
    if (::access("/usr/bin/node", X_OK) != 0) GTEST_SKIP() << "node is not installed";
    if (!fs::exists(everything_js()))
      GTEST_SKIP() << "server-everything is not installed at " << everything_js()
                   << " (scripts/lib.sh moat_install_mcp_servers needs npm)";
    make_workspace();
  }
  void TearDown() override {
    stop_moatd();
    if (server_ > 0) {
      ::kill(server_, SIGKILL);
      wait_exit(server_, 10);
    }
  }
  // server-everything in `mode` (streamableHttp or sse) on 127.0.0.1, its port from PORT.
  void start_server(const std::string& mode) {
    port_ = free_loopback_port();
    server_ = start({"/usr/bin/node", everything_js(), mode}, dir_.path() + "/server.log",
                    {"PORT=" + std::to_string(port_)});
    ASSERT_TRUE(eventually([&] { return listening_on_loopback(port_); }))
        << read_file(dir_.path() + "/server.log");
  }
  // A user layer declaring the server "web" at `path` on the server's port, allowing its
  // tools, with `network` as its [[network]] rules.
  void start_moatd_with(const std::string& path, const std::string& network) {
    fs::create_directories(dir_.path() + "/user");
    fs::create_directories(dir_.path() + "/system");
    std::ofstream(dir_.path() + "/user/mcp.toml")
        << "schema = 1\n\n[[mcp.server]]\nname = \"web\"\nurl = \"http://127.0.0.1:" << port_
        << path << "\"\nstart = \"session\"\n\n"
        << "[[tool]]\nid = \"web-tools\"\ndecision = \"allow\"\ntool = [\"mcp:web:*\"]\n\n"
        << network;
    start_moatd({"--audit-dir", dir_.path() + "/audit", "--system-policy-dir",
                 dir_.path() + "/system", "--user-policy-dir", dir_.path() + "/user"});
    ASSERT_TRUE(eventually([&] { return RawClient(socket_).connected(); })) << moatd_log();
  }
  std::string loopback_rule() const {
    return "[[network]]\nid = \"web-server\"\ndecision = \"allow\"\ndomains = [\"127.0.0.1\"]\n"
           "ports = [" + std::to_string(port_) + "]\n";
  }
  json hello(RawClient& c) {
    c.send_json({{"type", "hello"}, {"version", 1}, {"workspace", ws_}, {"headless", true}});
    return c.read_frame(60000);
  }
  static std::string text_of(const json& result) {
    std::string text;
    for (const json& b : result.value("content", json::array())) text += b.value("text", "");
    return text;
  }
  // The echo tool called through moatd; its records: the mcp.call, and the proxy's net
  // records of the server's connections.
  void echo_through_moatd() {
    RawClient c(socket_);
    const json welcome = hello(c);
    ASSERT_EQ(welcome.value("type", ""), "welcome") << welcome.dump() << moatd_log();
    bool offered = false;
    for (const json& t : welcome["tools"]) offered |= t.value("name", "") == "mcp__web__echo";
    ASSERT_TRUE(offered) << welcome["tools"].dump() << moatd_log();
    c.send_json({{"type", "call"},
                 {"id", "e1"},
                 {"tool", "mcp__web__echo"},
                 {"arguments", {{"message", "over http"}}}});
    const json r = c.read_result(60000);
    EXPECT_FALSE(r.value("isError", true)) << r.dump();
    EXPECT_NE(text_of(r).find("over http"), std::string::npos) << r.dump();
    c.send_json({{"type", "bye"}});
    EXPECT_EQ(c.read_result().value("type", ""), "bye");
    const std::vector<json> log = records_of(welcome["audit"].get<std::string>());
    ASSERT_EQ(of_type(log, "mcp.call").size(), 1u);
    const auto nets = of_type(log, "net");
    ASSERT_FALSE(nets.empty()) << "the server's connections went through the session's proxy";
    for (const json& n : nets) {
      EXPECT_EQ(n.value("mcp_server", ""), "web") << n.dump();
      EXPECT_EQ(n.value("host", ""), "127.0.0.1") << n.dump();
      EXPECT_EQ(n.value("port", 0), port_) << n.dump();
      EXPECT_EQ(n.value("decision", ""), "allow") << n.dump();
      EXPECT_EQ(n.value("rule", ""), "web-server") << n.dump();
    }
  }

  pid_t server_ = -1;
  int port_ = 0;
};

TEST_F(McpHttpTest, AStreamableHttpServersToolIsCalledThroughTheSessionsProxy) {
  start_server("streamableHttp");
  start_moatd_with("/mcp", loopback_rule());
  echo_through_moatd();
}

TEST_F(McpHttpTest, AnHttpSseServersToolIsCalledThroughTheSessionsProxy) {
  start_server("sse");
  start_moatd_with("/sse", loopback_rule());
  echo_through_moatd();
}

// The proxy runs (a rule allows some other host) but no rule names 127.0.0.1: the server
// offers no tool, and its records and a call's error name the server and the refusing rule.
TEST_F(McpHttpTest, AUrlTheRulesDenyIsRefusedNamingTheServerAndTheRule) {
  start_server("streamableHttp");
  start_moatd_with("/mcp",
                   "[[network]]\nid = \"elsewhere\"\ndecision = \"allow\"\n"
                   "domains = [\"example.com\"]\nports = [443]\n");
  RawClient c(socket_);
  const json welcome = hello(c);
  ASSERT_EQ(welcome.value("type", ""), "welcome") << welcome.dump() << moatd_log();
  for (const json& t : welcome["tools"]) EXPECT_NE(t.value("name", ""), "mcp__web__echo");
  c.send_json({{"type", "bye"}});
  EXPECT_EQ(c.read_result().value("type", ""), "bye");
  const std::vector<json> log = records_of(welcome["audit"].get<std::string>());
  std::string error;
  for (const json& s : of_type(log, "mcp.server")) error += s.value("error", "");
  EXPECT_NE(error.find("mcp server web: url http://127.0.0.1:" + std::to_string(port_) +
                       "/mcp refused by the session's proxy: connection to 127.0.0.1:" +
                       std::to_string(port_) + " refused by rule builtin.network-ip-literal"),
            std::string::npos)
      << error;
  const auto nets = of_type(log, "net");
  ASSERT_FALSE(nets.empty());
  EXPECT_EQ(nets[0].value("decision", ""), "deny") << nets[0].dump();
  EXPECT_EQ(nets[0].value("mcp_server", ""), "web") << nets[0].dump();
}

// No [[network]] rule at all: the session has no proxy, and the server is refused naming the
// network layer; nothing connects.
TEST_F(McpHttpTest, WithoutTheSessionsNetworkAUrlServerIsRefused) {
  start_server("streamableHttp");
  start_moatd_with("/mcp", "");
  RawClient c(socket_);
  const json welcome = hello(c);
  ASSERT_EQ(welcome.value("type", ""), "welcome") << welcome.dump() << moatd_log();
  c.send_json({{"type", "bye"}});
  EXPECT_EQ(c.read_result().value("type", ""), "bye");
  const std::vector<json> log = records_of(welcome["audit"].get<std::string>());
  std::string error;
  for (const json& s : of_type(log, "mcp.server")) error += s.value("error", "");
  EXPECT_NE(error.find("mcp server web: url http://127.0.0.1:" + std::to_string(port_) +
                       "/mcp is not reached: the session has no network"),
            std::string::npos)
      << error;
  EXPECT_TRUE(of_type(log, "net").empty());
}

// An `ask` [[network]] rule for the server's host in a terminal session: moatd connects the
// server while it builds the session, before any console is attached, so nobody can be asked:
// the proxy refuses the connection naming the rule (docs/mcp.md), the hello is not held up, and
// the welcome's status names the server and the rule.
TEST_F(McpHttpTest, AnAskRuleForAUrlServerInATerminalSessionRefusesItNamingTheRule) {
  start_server("streamableHttp");
  start_moatd_with("/mcp", "[[network]]\nid = \"web-ask\"\ndecision = \"ask\"\ndomains = "
                           "[\"127.0.0.1\"]\nports = [" + std::to_string(port_) + "]\n");
  RawClient c(socket_);
  c.send_json({{"type", "hello"}, {"version", 1}, {"workspace", ws_}, {"headless", false}});
  const json welcome = c.read_frame(60000);
  ASSERT_EQ(welcome.value("type", ""), "welcome") << welcome.dump() << moatd_log();
  json web;
  for (const json& s : welcome.value("mcp_servers", json::array()))
    if (s.value("name", "") == "web") web = s;
  EXPECT_EQ(web.value("state", ""), "failed") << welcome.dump();
  const std::string error = web.value("error", "");
  EXPECT_NE(error.find("mcp server web"), std::string::npos) << error;
  EXPECT_NE(error.find("web-ask"), std::string::npos) << error;
  for (const json& t : welcome["tools"]) EXPECT_NE(t.value("name", ""), "mcp__web__echo");
}

}  // namespace
}  // namespace moat::e2e
