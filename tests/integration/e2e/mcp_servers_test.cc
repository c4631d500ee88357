// tests/integration/e2e/mcp_servers_test.cc: the pinned MCP reference servers (tests/mcp-servers,
// installed by scripts/lib.sh into the build tree) run INSIDE a session sandbox under the
// built-in default policy through `moat sandbox exec` (issue 29 item 2): what a server needs
// there (docs/mcp.md "What a server needs in the sandbox"), and that the sandbox, not the
// server's own root argument, bounds what server-filesystem reads.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "base/shell_words.h"
#include "e2e_support.h"
#include "workspace_test.h"

namespace moat::e2e {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Where scripts/lib.sh's moat_install_mcp_servers puts them.
std::string servers_root() { return env_or("MOAT_BUILD_ROOT", "build") + "/mcp-servers"; }
std::string server_js(const std::string& name) {
  return servers_root() + "/node_modules/@modelcontextprotocol/server-" + name + "/dist/index.js";
}

// The newline-delimited JSON-RPC a client opens with (MCP's stdio transport and lifecycle),
// then `requests`, each with the next id from 2.
std::string session_lines(const std::vector<json>& requests) {
  std::string out =
      json({{"jsonrpc", "2.0"},
            {"id", 1},
            {"method", "initialize"},
            {"params",
             {{"protocolVersion", "2025-06-18"},
              {"capabilities", json::object()},
              {"clientInfo", {{"name", "moat-test"}, {"version", "0"}}}}}})
          .dump() +
      "\n" + json({{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}}).dump() + "\n";
  int id = 2;
  for (json r : requests) {
    r["jsonrpc"] = "2.0";
    r["id"] = id++;
    out += r.dump() + "\n";
  }
  return out;
}

json call(const std::string& tool, const json& args) {
  return {{"method", "tools/call"}, {"params", {{"name", tool}, {"arguments", args}}}};
}

// The answers a server wrote, by id (notifications left out).
std::map<int, json> answers(const std::string& out) {
  std::map<int, json> by_id;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    const json m = json::parse(line, nullptr, false);
    if (m.is_object() && m.contains("id") && m["id"].is_number_integer())
      by_id[m["id"].get<int>()] = m;
  }
  return by_id;
}

// A tool result's text (its content blocks of type text, joined).
std::string result_text(const json& answer) {
  std::string text;
  for (const auto& c : answer.value("/result/content"_json_pointer, json::array()))
    if (c.value("type", "") == "text") text += c.value("text", "");
  return text;
}

class McpServersTest : public WorkspaceTest {
 protected:
  void SetUp() override {
    WorkspaceTest::SetUp();
    if (IsSkipped()) return;
    if (::access("/usr/bin/node", X_OK) != 0) GTEST_SKIP() << "node is not installed";
    if (!fs::exists(server_js("everything")))
      GTEST_SKIP() << "the MCP reference servers are not installed in " << servers_root()
                   << " (scripts/lib.sh moat_install_mcp_servers needs npm)";
    fs::create_directories(dir_.path() + "/no-system-layer");
  }
  // Runs `node <server> ARGS` in a fresh sandbox under the built-in default policy (and
  // `narrow`, a --policy file, when given), its install dir bound read-only at the same path,
  // with `lines` on its stdin.
  SplitRun serve(const std::string& server, const std::string& args, const std::string& lines,
                 const std::string& opts = "", const std::string& narrow = "") {
    std::string line = shell_quote(moat_bin()) + " sandbox exec --system-policy-dir " +
                       shell_quote(dir_.path() + "/no-system-layer") + " --audit-dir " +
                       shell_quote(dir_.path() + "/audit") + " -C " + shell_quote(ws_) +
                       " --ro-bind " + shell_quote(servers_root()) + " " +
                       shell_quote(servers_root()) + " " + opts;
    if (!narrow.empty()) {
      std::ofstream(dir_.path() + "/narrow.toml") << "schema = 1\n" << narrow;
      line += " --policy " + shell_quote(dir_.path() + "/narrow.toml");
    }
    line += " -- node " + shell_quote(server_js(server)) + " " + args;
    return run_split({"/bin/sh", "-c", line}, env(), 60, lines);
  }
};

TEST_F(McpServersTest, EachReferenceServerInitializesAndListsItsToolsInsideTheSandbox) {
  const struct {
    const char* server;
    const char* args;
    const char* tool;  // one tool it must list
  } servers[] = {{"everything", "stdio", "echo"},
                 {"filesystem", "/", "read_text_file"},
                 {"memory", "", "create_entities"}};
  for (const auto& s : servers) {
    SCOPED_TRACE(s.server);
    const SplitRun r = serve(s.server, s.args, session_lines({{{"method", "tools/list"}}}));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    auto by_id = answers(r.out);
    ASSERT_TRUE(by_id.count(1) && by_id.count(2)) << r.out << r.err;
    EXPECT_EQ(by_id[1].value("/result/protocolVersion"_json_pointer, ""), "2025-06-18");
    bool listed = false;
    for (const auto& t : by_id[2].value("/result/tools"_json_pointer, json::array()))
      listed = listed || t.value("name", "") == s.tool;
    EXPECT_TRUE(listed) << by_id[2].dump();
  }
}

TEST_F(McpServersTest, EveryServersToolCallWorksWithTheWorkspaceAsItsOnlyWritablePlace) {
  SplitRun r = serve("everything", "stdio",
                     session_lines({call("echo", {{"message", "through the sandbox"}})}));
  EXPECT_EQ(result_text(answers(r.out)[2]), "Echo: through the sandbox") << r.out << r.err;
  // server-memory writes its graph beside its own code unless told otherwise: that directory
  // is read-only in the sandbox, so the graph goes to the workspace.
  const json entity = {{"name", "moat"}, {"entityType", "project"}, {"observations", {"sandboxed"}}};
  r = serve("memory", "", session_lines({call("create_entities", {{"entities", {entity}}})}),
            "--setenv MEMORY_FILE_PATH " + shell_quote(ws_ + "/memory.jsonl"));
  EXPECT_FALSE(answers(r.out)[2].value("/result/isError"_json_pointer, false)) << r.out << r.err;
  EXPECT_NE(read_file(ws_ + "/memory.jsonl").find("\"sandboxed\""), std::string::npos) << r.err;
  r = serve("memory", "", session_lines({call("create_entities", {{"entities", {entity}}})}));
  EXPECT_TRUE(answers(r.out)[2].value("/result/isError"_json_pointer, false))
      << "its own install directory is read-only inside: " << r.out;
}

// server-filesystem's root argument is "/": what it reads is bounded by the session's view
// (the workspace, the system trees, a --ro-bind) and the policy's read rules, not by it.
TEST_F(McpServersTest, FilesystemServerGivenRootReadsOnlyWhatTheSandboxShows) {
  std::ofstream(ws_ + "/inside.txt") << "workspace bytes\n";
  const std::string data = dir_.path() + "/data";
  fs::create_directories(data);
  std::ofstream(data + "/public.txt") << "bound bytes\n";
  std::ofstream(data + "/token.key") << "host secret bytes\n";
  std::ofstream(dir_.path() + "/outside.txt") << "unbound host bytes\n";
  const std::string hide = "[[path]]\nid = \"cli.keys\"\ndecision = \"deny\"\naccess = "
                           "[\"read\"]\npaths = [\"*.key\"]\n";
  const auto read = [](const std::string& path) { return call("read_text_file", {{"path", path}}); };
  const SplitRun r =
      serve("filesystem", "/",
            session_lines({read(ws_ + "/inside.txt"), read("/data/public.txt"),
                           read("/data/token.key"), read(dir_.path() + "/outside.txt"),
                           read("/etc/shadow")}),
            "--ro-bind " + shell_quote(data) + " /data", hide);
  auto by_id = answers(r.out);
  EXPECT_EQ(result_text(by_id[2]), "workspace bytes\n") << r.out << r.err;
  EXPECT_EQ(result_text(by_id[3]), "bound bytes\n") << r.out << r.err;
  EXPECT_EQ(result_text(by_id[4]), "") << "a denied file is covered by an empty one";
  for (int id : {5, 6}) {
    SCOPED_TRACE(id);
    ASSERT_TRUE(by_id.count(id)) << r.out << r.err;
    EXPECT_TRUE(by_id[id].value("/result/isError"_json_pointer, false)) << by_id[id].dump();
  }
  EXPECT_EQ(r.out.find("secret bytes"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("unbound host bytes"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace moat::e2e
