// tests/integration/e2e/mcp_run_test.cc: `moat run` against the mock model server calling a tool
// of each pinned reference server, which moatd runs inside the session's sandbox (issue 29,
// "Tests with real servers"): the tools are offered as mcp__SERVER__TOOL, each call's result
// reaches the model in the next request, each call is in the audit log, and server-filesystem
// given "/" as its root reads nothing the sandbox does not show.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "mocked_run.h"

namespace moat::e2e {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using agent::providers::Api;

std::string servers_root() { return env_or("MOAT_BUILD_ROOT", "build") + "/mcp-servers"; }
std::string server_js(const std::string& name) {
  return servers_root() + "/node_modules/@modelcontextprotocol/server-" + name + "/dist/index.js";
}

// The user layer: the three servers, their install bound read-only, and allows for the tools
// the model calls (headless, the default policy's tool default, ask, would refuse them).
std::string user_layer() {
  std::string toml = "schema = 1\n";
  const struct {
    const char *name, *server, *arg;
  } servers[] = {{"everything", "everything", "\"stdio\""},
                 {"files", "filesystem", "\"/\""},
                 {"memory", "memory", ""}};
  for (const auto& s : servers)
    toml += std::string("\n[[mcp.server]]\nname = \"") + s.name + "\"\ncommand = [\"node\", \"" +
            server_js(s.server) + "\"" + (*s.arg ? std::string(", ") + s.arg : "") +
            "]\nread = [\"" + servers_root() + "\"]\n";
  return toml +
         "\n[[tool]]\nid = \"user.mcp\"\ndecision = \"allow\"\ntool = [\"mcp:everything:echo\", "
         "\"mcp:files:read_text_file\", \"mcp:memory:read_graph\"]\n";
}

testing::ScriptedTurn mcp_turn(const std::string& id, const std::string& tool, const json& args) {
  testing::ScriptedTurn t;
  t.text = "Calling " + tool + ".";
  t.calls.push_back({id, tool, args});
  return t;
}

class McpRunTest : public MockedRun {
 protected:
  void SetUp() override {
    if (::access("/usr/bin/node", X_OK) != 0) GTEST_SKIP() << "node is not installed";
    if (!fs::exists(server_js("everything")))
      GTEST_SKIP() << "the MCP reference servers are not installed in " << servers_root()
                   << " (scripts/lib.sh moat_install_mcp_servers needs npm)";
    start(Api::kOpenAiChat);
    if (IsSkipped()) return;
    fs::create_directories(dir_.path() + "/config/moat/policy.d");
    std::ofstream(dir_.path() + "/config/moat/policy.d/mcp.toml") << user_layer();
  }
  // Every audit record of the run.
  std::vector<json> audit_records() const {
    std::vector<json> out;
    for (const auto& e : fs::recursive_directory_iterator(dir_.path() + "/audit")) {
      if (!e.is_regular_file() || e.path().extension() != ".jsonl") continue;
      std::ifstream in(e.path());
      for (std::string line; std::getline(in, line);)
        if (json j = json::parse(line, nullptr, false); j.is_object()) out.push_back(j);
    }
    return out;
  }
};

TEST_F(McpRunTest, AToolOfEachReferenceServerRunsInTheSandboxAndItsResultReachesTheModel) {
  std::ofstream(ws_ + "/inside.txt") << "workspace bytes\n";
  std::ofstream(dir_.path() + "/outside.txt") << "unbound host bytes\n";
  server_->push_turn(mcp_turn("c1", "mcp__everything__echo", {{"message", "hello from the model"}}));
  server_->push_turn(mcp_turn("c2", "mcp__files__read_text_file", {{"path", ws_ + "/inside.txt"}}));
  server_->push_turn(
      mcp_turn("c3", "mcp__files__read_text_file", {{"path", dir_.path() + "/outside.txt"}}));
  server_->push_turn(mcp_turn("c4", "mcp__memory__read_graph", json::object()));
  server_->push_turn(text_turn("Done."));
  const SplitRun r = moat({"--headless"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const auto requests = server_->requests();
  ASSERT_EQ(requests.size(), 5u) << r.err;
  for (const char* tool : {"mcp__everything__echo", "mcp__files__read_text_file",
                           "mcp__memory__read_graph"})
    EXPECT_NE(requests[0].body.find(tool), std::string::npos) << tool << " was not offered";
  EXPECT_NE(requests[1].body.find("Echo: hello from the model"), std::string::npos);
  EXPECT_NE(requests[2].body.find("workspace bytes"), std::string::npos);
  EXPECT_EQ(requests[3].body.find("unbound host bytes"), std::string::npos)
      << "server-filesystem read a host file the sandbox does not show";
  EXPECT_NE(requests[4].body.find("entities"), std::string::npos);
  // Each call: its mcp.call record names the server, the tool and the decision before it,
  // and a decision record with that id comes first.
  std::map<std::string, json> calls;  // call_id -> mcp.call
  std::set<std::string> decisions;    // decision ids seen before
  for (const auto& rec : audit_records()) {
    const std::string type = rec.value("type", "");
    if (type == "decision") decisions.insert(rec.value("decision_id", ""));
    if (type != "mcp.call") continue;
    EXPECT_TRUE(decisions.count(rec.value("decision_id", ""))) << rec.dump();
    calls[rec.value("call_id", "")] = rec;
  }
  const std::map<std::string, std::pair<std::string, std::string>> want = {
      {"c1", {"everything", "echo"}},
      {"c2", {"files", "read_text_file"}},
      {"c3", {"files", "read_text_file"}},
      {"c4", {"memory", "read_graph"}}};
  for (const auto& [id, st] : want) {
    ASSERT_TRUE(calls.count(id)) << "no mcp.call record for " << id;
    EXPECT_EQ(calls[id].value("server", ""), st.first) << calls[id].dump();
    EXPECT_EQ(calls[id].value("server_tool", ""), st.second) << calls[id].dump();
    EXPECT_EQ(calls[id].value("tool", ""), "mcp__" + st.first + "__" + st.second);
  }
  EXPECT_GT(calls["c1"].value("result_bytes", 0), 0) << calls["c1"].dump();
}

}  // namespace
}  // namespace moat::e2e
