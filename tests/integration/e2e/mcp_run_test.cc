// tests/integration/e2e/mcp_run_test.cc: `moat run` against the mock model server calling a tool
// of each pinned reference server, which moatd runs inside the session's sandbox (issue 29,
// "Tests with real servers"): the tools are offered as mcp__SERVER__TOOL, each call's result
// reaches the model in the next request, each call is in the audit log, and server-filesystem
// given "/" as its root reads nothing the sandbox does not show. With the test server
// (tests/support/mcp_test_server.cc): a tool the policy asks for is asked at a real terminal
// (tmux) and refused headless, and a repository's .mcp.json serves no tool until it is pinned.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "base/shell_words.h"
#include "mocked_run.h"
#include "tmux_session.h"

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

// `moat run` with the test server: a copy in `dir` (which the sandbox's uid may read).
class McpPolicyRunTest : public MockedRun {
 protected:
  void SetUp() override {
    if (!fs::exists(mcp_test_server_bin()))
      GTEST_SKIP() << "no test server at " << mcp_test_server_bin();
    start(Api::kOpenAiChat);
    if (IsSkipped()) return;
    fs::permissions(dir_.path(), fs::perms::all, fs::perm_options::add);
    fs::create_directories(dir_.path() + "/config/moat/policy.d");
  }
  // A user layer: `toml` after the schema line.
  void user_layer(const std::string& toml) {
    std::ofstream(dir_.path() + "/config/moat/policy.d/mcp.toml") << "schema = 1\n" << toml;
  }
  // The server "t" declared by the user, whose echo a rule asks for.
  void ask_for_echo() {
    const std::string srv = dir_.path() + "/srv";
    const std::string bin = copy_mcp_test_server(srv);
    user_layer("\n[[mcp.server]]\nname = \"t\"\ncommand = [\"" + bin + "\"]\nread = [\"" + srv +
               "\"]\n\n[[tool]]\nid = \"user.ask-echo\"\ndecision = \"ask\"\n"
               "tool = [\"mcp:t:echo\"]\n");
  }
  std::vector<json> audit_records() const {
    std::vector<json> out;
    for (const auto& e : fs::recursive_directory_iterator(dir_.path() + "/audit"))
      if (e.is_regular_file() && e.path().extension() == ".jsonl")
        for (json& r : records_of(e.path().string())) out.push_back(std::move(r));
    return out;
  }
  // call id -> the result of the decision record for it, and the ids of the mcp.call records.
  std::map<std::string, std::string> decisions_by_call() const {
    std::map<std::string, std::string> out;
    for (const json& r : of_type(audit_records(), "decision"))
      out[r.value("call_id", "")] = r.value("result", "");
    return out;
  }
  std::set<std::string> mcp_calls() const {
    std::set<std::string> out;
    for (const json& r : of_type(audit_records(), "mcp.call")) out.insert(r.value("call_id", ""));
    return out;
  }
  // The moat run command line as the person types it at the terminal (see terminal_view_test).
  std::string command_line(const std::string& task) const {
    std::string line = "trap : INT; env";
    for (const std::string& e : env()) line += " " + shell_quote(e);
    std::vector<std::string> argv = run_argv();
    argv.push_back(task);
    for (const std::string& a : argv) line += " " + shell_quote(a);
    return line + "; echo EXIT=$?; sleep 60";
  }
};

// Headless, a tool the policy asks for is refused: its decision is a deny, the server is not
// called, and the model is told.
TEST_F(McpPolicyRunTest, AToolThePolicyAsksForIsRefusedHeadless) {
  ask_for_echo();
  server_->push_turn(mcp_turn("h1", "mcp__t__echo", {{"text", "zebra-headless"}}));
  server_->push_turn(text_turn("Done."));
  const SplitRun r = moat({"--headless"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const auto requests = server_->requests();
  ASSERT_EQ(requests.size(), 2u) << r.err;
  EXPECT_EQ(decisions_by_call()["h1"], "deny") << r.err;
  EXPECT_TRUE(mcp_calls().empty()) << "the server was called";
  EXPECT_NE(requests[1].body.find("headless"), std::string::npos) << requests[1].body;
}

// At a terminal (tmux) the same ask is put to the person: "n" refuses the call (the server is
// not called), "y" runs the next one, whose result reaches the model.
TEST_F(McpPolicyRunTest, AToolThePolicyAsksForIsAskedAtATerminalNoRefusesYesRuns) {
  if (!Tmux::installed()) GTEST_SKIP() << "tmux is not installed (it stands in for a person)";
  ask_for_echo();
  server_->push_turn(mcp_turn("n1", "mcp__t__echo", {{"text", "zebra-no"}}));
  server_->push_turn(mcp_turn("y1", "mcp__t__echo", {{"text", "zebra-yes"}}));
  server_->push_turn(text_turn("Done."));
  Tmux t("moat-mcp-ask-" + std::to_string(::getpid()));
  ASSERT_EQ(t.tmux("new-session -d -s t -x 120 -y 50 " + shell_quote(command_line("echo twice"))),
            0);
  ASSERT_TRUE(t.shows("deny [n]?", 60)) << t.pane();
  EXPECT_TRUE(t.shows("mcp__t__echo")) << t.pane();
  t.keys("n Enter");
  ASSERT_TRUE(eventually([&] { return server_->requests().size() >= 2; })) << t.pane();
  ASSERT_TRUE(eventually([&] {
    const std::string pane = t.pane();
    std::size_t first = pane.find("deny [n]?");
    return first != std::string::npos && pane.find("deny [n]?", first + 1) != std::string::npos;
  })) << "the second call is asked:\n" << t.pane();
  t.keys("y Enter");
  ASSERT_TRUE(t.shows("allowed once", 60)) << t.pane();
  ASSERT_TRUE(eventually([&] { return server_->requests().size() >= 3; })) << t.pane();
  t.keys("/exit Enter");
  EXPECT_TRUE(t.shows("EXIT=", 60)) << t.pane();
  const auto requests = server_->requests();
  ASSERT_EQ(requests.size(), 3u);
  auto decisions = decisions_by_call();
  EXPECT_EQ(decisions["n1"], "deny");
  EXPECT_EQ(decisions["y1"], "allow");
  EXPECT_EQ(mcp_calls(), std::set<std::string>{"y1"}) << "only the call answered yes ran";
  EXPECT_NE(requests[2].body.find("zebra-yes"), std::string::npos);
}

// A repository's .mcp.json declares a server; the person's user layer allows its tools. Not
// pinned, its tool is not offered and a call of it is refused; after `moat policy trust` the
// next run offers it and the call runs in the sandbox.
TEST_F(McpPolicyRunTest, ARepositorysMcpJsonServesNoToolUntilItIsPinned) {
  const std::string bin = copy_mcp_test_server(ws_ + "/tools");
  std::ofstream(ws_ + "/.mcp.json")
      << json{{"mcpServers", {{"repo", {{"command", bin}, {"args", json::array()}}}}}}.dump(2);
  user_layer("\n[[tool]]\nid = \"user.repo\"\ndecision = \"allow\"\ntool = [\"mcp:repo:echo\"]\n");
  server_->push_turn(mcp_turn("u1", "mcp__repo__echo", {{"text", "zebra-untrusted"}}));
  server_->push_turn(text_turn("Done."));
  const SplitRun before = moat({"--headless"});
  EXPECT_EQ(before.exit_code, 0) << before.err;
  auto requests = server_->requests();
  ASSERT_EQ(requests.size(), 2u) << before.err;
  EXPECT_EQ(requests[0].body.find("mcp__repo__echo"), std::string::npos) << "offered untrusted";
  EXPECT_TRUE(mcp_calls().empty()) << "the untrusted server was called";

  const e2e::Run pinned = run({moat_bin(), "policy", "trust", "--workspace", ws_}, env(), 30);
  ASSERT_EQ(pinned.exit_code, 0) << pinned.out;
  server_->push_turn(mcp_turn("t1", "mcp__repo__echo", {{"text", "zebra-trusted"}}));
  server_->push_turn(text_turn("Done."));
  const SplitRun after = moat({"--headless"});
  EXPECT_EQ(after.exit_code, 0) << after.err;
  requests = server_->requests();
  ASSERT_EQ(requests.size(), 4u) << after.err;
  EXPECT_NE(requests[2].body.find("mcp__repo__echo"), std::string::npos) << "not offered pinned";
  EXPECT_EQ(mcp_calls(), std::set<std::string>{"t1"});
  EXPECT_EQ(decisions_by_call()["t1"], "allow");
}

}  // namespace
}  // namespace moat::e2e
