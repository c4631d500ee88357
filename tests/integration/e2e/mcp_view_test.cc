// tests/integration/e2e/mcp_view_test.cc: what a person and the model see of a session's MCP
// servers through `moat run` (issue 29 points 5 and 6), with the test server
// (tests/support/mcp_test_server.cc) declared in the user layer and run by moatd in the
// sandbox, against the mock model server: an image a tool returns reaches the model in each
// wire format's way; at a real terminal (tmux) /mcp lists the servers with their tools'
// decisions, and a running call's progress is one line, updated.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
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

// The test server as meson builds it (tests/unit/tools/meson.build), beside moatd's build tree.
std::string built_server() {
  return (fs::path(moatd_bin()).parent_path().parent_path() / "tests/unit/tools/mcp_test_server")
      .string();
}

testing::ScriptedTurn mcp_turn(const std::string& id, const std::string& tool, const json& args) {
  testing::ScriptedTurn t;
  t.text = "Calling " + tool + ".";
  t.calls.push_back({id, tool, args});
  return t;
}

class McpViewTest : public MockedRun {
 protected:
  // The mock for `api`; the server "t" in the user layer, its tools allowed but `fail`, which
  // a rule denies.
  void start_with_server(Api api, const std::string& mode = "") {
    if (!fs::exists(built_server())) GTEST_SKIP() << "no test server at " << built_server();
    start(api);
    if (IsSkipped()) return;
    const std::string srv = dir_.path() + "/srv";  // its `read` bind: a copy of its own
    fs::create_directories(srv);
    if (!fs::exists(srv + "/mcp_test_server")) fs::copy_file(built_server(), srv + "/mcp_test_server");
    fs::permissions(dir_.path(), fs::perms::all, fs::perm_options::add);
    fs::permissions(srv, fs::perms::all, fs::perm_options::add);
    fs::create_directories(dir_.path() + "/config/moat/policy.d");
    std::ofstream(dir_.path() + "/config/moat/policy.d/mcp.toml")
        << "schema = 1\n\n[[mcp.server]]\nname = \"t\"\ncommand = [\"" << srv
        << "/mcp_test_server\"" << (mode.empty() ? "" : ", \"" + mode + "\"") << "]\nread = [\""
        << srv << "\"]\nstart = \"session\"\n\n"
        << "[[tool]]\nid = \"t-tools\"\ndecision = \"allow\"\ntool = [\"mcp:t:*\"]\n"
        << "unless = { tool = [\"mcp:t:fail\"] }\n\n"
        << "[[tool]]\nid = \"no-fail\"\ndecision = \"deny\"\ntool = [\"mcp:t:fail\"]\n";
  }

  // moat at a terminal of the test's own (120x50), a session of prompts.
  std::unique_ptr<Tmux> start_moat() {
    std::string line = "env";
    for (const std::string& e : env()) line += " " + shell_quote(e);
    for (const std::string& a : run_argv()) line += " " + shell_quote(a);
    line += "; echo EXIT=$?; sleep 60";
    auto t = std::make_unique<Tmux>("moat-mcp-" + std::to_string(getpid()));
    EXPECT_EQ(t->tmux("new-session -d -s t -x 120 -y 50 " + shell_quote(line)), 0);
    return t;
  }
};

// The tool result message of the request after the call, in each API's shape.
json tool_output(Api api, const json& body) {
  if (api == Api::kAnthropic) return body["messages"].back()["content"][0]["content"];
  if (api == Api::kOpenAiResponses) return body["input"].back()["output"];
  return body["messages"].back()["content"];
}

// The test server's `image` tool answers a 1x1 PNG: Anthropic gets it as an image block of the
// tool_result, Responses as an input_image part of the call's output; Chat Completions' tool
// message takes text only, so the model reads a line naming the image's type and size.
TEST_F(McpViewTest, AServersImageReachesTheModelAsEachApiTakesIt) {
  for (Api api : {Api::kAnthropic, Api::kOpenAiResponses, Api::kOpenAiChat}) {
    start_with_server(api);
    if (IsSkipped()) return;
    server_->push_turn(mcp_turn("c1", "mcp__t__image", json::object()));
    server_->push_turn(text_turn("Done."));
    const SplitRun r = moat({"--headless"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto requests = server_->requests();
    ASSERT_EQ(requests.size(), 2u) << r.err;
    const json out = tool_output(api, json::parse(requests[1].body));
    const std::string shown = out.dump();
    SCOPED_TRACE(std::string(agent::providers::api_name(api)) + ": " + shown);
    if (api == Api::kAnthropic) {
      ASSERT_TRUE(out.is_array() && out.size() == 1);
      EXPECT_EQ(out[0]["type"], "image");
      EXPECT_EQ(out[0]["source"]["media_type"], "image/png");
      EXPECT_EQ(out[0]["source"]["data"].get<std::string>().rfind("iVBORw0KGgo", 0), 0u);
    } else if (api == Api::kOpenAiResponses) {
      ASSERT_TRUE(out.is_array() && out.size() == 1);
      EXPECT_EQ(out[0]["type"], "input_image");
      EXPECT_EQ(out[0]["image_url"].get<std::string>().rfind("data:image/png;base64,iVBORw0KGgo", 0),
                0u);
    } else {
      EXPECT_TRUE(out.is_string());
      EXPECT_NE(shown.find("[image image/png, "), std::string::npos);
      EXPECT_NE(shown.find("this API takes no image in a tool result]"), std::string::npos);
    }
  }
}

// /mcp answers from what moatd told the client at welcome: the server, its state, its log and
// each tool with its decision (a denied one is not offered). Then a call of the server's slow
// tool: its progress notifications are one line under the running call, replaced as they come.
TEST_F(McpViewTest, SlashMcpListsTheServerAndAProgressIsOneUpdatedLine) {
  if (!Tmux::installed()) GTEST_SKIP() << "tmux is not installed (it stands in for a person)";
  start_with_server(Api::kOpenAiChat);
  if (IsSkipped()) return;
  server_->push_turn(mcp_turn("c1", "mcp__t__slow", {{"steps", 150}}));  // 3 s of progress
  server_->push_turn(text_turn("Done."));
  auto t = start_moat();
  ASSERT_TRUE(t->shows("type a prompt", 60)) << t->pane();
  t->keys("/mcp Enter");
  ASSERT_TRUE(t->shows("moat: MCP servers:")) << t->pane();
  const std::string listed = t->pane();
  EXPECT_NE(listed.find("  t · started · "), std::string::npos) << listed;
  EXPECT_NE(listed.find(".mcp-t.log"), std::string::npos) << listed;
  EXPECT_NE(listed.find("    mcp__t__echo · allow"), std::string::npos) << listed;
  EXPECT_NE(listed.find("    mcp__t__fail · deny (not offered)"), std::string::npos) << listed;
  t->keys("'run the slow tool' Enter");
  ASSERT_TRUE(t->shows("| progress ", 30)) << t->pane();
  const std::string first = t->pane();
  std::size_t lines = 0;
  for (std::size_t at = 0; (at = first.find("| progress ", at)) != std::string::npos; ++at)
    ++lines;
  EXPECT_EQ(lines, 1u) << first;
  auto progress_line = [](const std::string& pane) {
    const std::size_t a = pane.find("| progress ");
    return a == std::string::npos ? std::string() : pane.substr(a, pane.find('\n', a) - a);
  };
  EXPECT_TRUE(eventually([&] {
    const std::string now = progress_line(t->pane());
    return !now.empty() && now != progress_line(first);
  })) << "the progress line was not updated:\n" << t->pane();
  ASSERT_TRUE(t->shows("Done.", 60)) << t->pane();
  t->keys("/exit Enter");
  EXPECT_TRUE(t->shows("EXIT=0", 60)) << t->pane();
}

// The mcp_status events of a --json run's stdout, each its server object.
std::vector<json> mcp_statuses(const std::string& out) {
  std::vector<json> got;
  std::size_t at = 0;
  for (std::size_t nl; (nl = out.find('\n', at)) != std::string::npos; at = nl + 1) {
    const json e = json::parse(out.substr(at, nl - at), nullptr, false);
    if (e.is_object() && e.value("type", "") == "mcp_status") got.push_back(e["server"]);
  }
  return got;
}

// A server that exits at every call (the test server's exit-on-call mode): each end reaches the
// event stream as it happens (moatd's mcp_status frame), each restart is announced before it
// runs, and the fourth end leaves it failed; nothing is sent twice for one state.
TEST_F(McpViewTest, AServerThatEndsAtEachCallIsReportedEndedRestartingThenFailed) {
  start_with_server(Api::kOpenAiChat, "exit-on-call");
  if (IsSkipped()) return;
  for (int i = 1; i <= 4; ++i)
    server_->push_turn(mcp_turn("c" + std::to_string(i), "mcp__t__echo", {{"text", "x"}}));
  server_->push_turn(text_turn("Done."));
  const SplitRun r = moat({"--headless", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> seen;
  for (const json& s : mcp_statuses(r.out))
    seen.push_back(s.value("state", "") + " " + std::to_string(s.value("restarts", -1)) + "/" +
                   std::to_string(s.value("max_restarts", -1)));
  const std::vector<std::string> want = {
      "ended 0/3",      "restarting 1/3", "started 1/3", "ended 1/3", "restarting 2/3",
      "started 2/3",    "ended 2/3",      "restarting 3/3", "started 3/3", "failed 3/3"};
  EXPECT_EQ(seen, want) << r.out;
  const std::vector<json> all = mcp_statuses(r.out);
  ASSERT_FALSE(all.empty());
  EXPECT_NE(all[0].value("error", "").find("exited with code 3"), std::string::npos) << all[0];
  EXPECT_NE(all.back().value("error", "").find("it ended 4 times in this session"),
            std::string::npos)
      << all.back();
}

// A server that says its tools changed: the status says so once (the session keeps the tools
// it listed at its start).
TEST_F(McpViewTest, AServerWhoseToolsChangedIsReportedOnce) {
  start_with_server(Api::kOpenAiChat);
  if (IsSkipped()) return;
  server_->push_turn(mcp_turn("c1", "mcp__t__touch", json::object()));
  server_->push_turn(mcp_turn("c2", "mcp__t__echo", {{"text", "x"}}));
  server_->push_turn(text_turn("Done."));
  const SplitRun r = moat({"--headless", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<json> got = mcp_statuses(r.out);
  ASSERT_EQ(got.size(), 1u) << r.out;
  EXPECT_EQ(got[0]["state"], "started");
  EXPECT_EQ(got[0]["tools_changed"], true);
}

// At a real terminal /mcp shows what happened since the start: after one call the server has
// ended (how, and that its next call starts it again); after three more it has failed, its
// three restarts used, the error naming why.
TEST_F(McpViewTest, SlashMcpShowsAServerThatEndedThenFailedAfterTheStart) {
  if (!Tmux::installed()) GTEST_SKIP() << "tmux is not installed (it stands in for a person)";
  start_with_server(Api::kOpenAiChat, "exit-on-call");
  if (IsSkipped()) return;
  server_->push_turn(mcp_turn("c1", "mcp__t__echo", {{"text", "x"}}));
  server_->push_turn(text_turn("First done."));
  for (int i = 2; i <= 4; ++i)
    server_->push_turn(mcp_turn("c" + std::to_string(i), "mcp__t__echo", {{"text", "x"}}));
  server_->push_turn(text_turn("Second done."));
  auto t = start_moat();
  ASSERT_TRUE(t->shows("type a prompt", 60)) << t->pane();
  t->keys("/mcp Enter");
  ASSERT_TRUE(t->shows("  t · started · ")) << t->pane();
  t->keys("'call it once' Enter");
  ASSERT_TRUE(t->shows("First done.", 60)) << t->pane();
  t->keys("/mcp Enter");
  ASSERT_TRUE(t->shows("  t · ended · ")) << t->pane();
  EXPECT_NE(t->pane().find("exited with code 3; started again at its next call"),
            std::string::npos)
      << t->pane();
  t->keys("'call it thrice' Enter");
  ASSERT_TRUE(t->shows("Second done.", 60)) << t->pane();
  t->keys("/mcp Enter");
  ASSERT_TRUE(t->shows("  t · failed (restarted 3 of 3 times) · ")) << t->pane();
  EXPECT_NE(t->pane().find("it ended 4 times in this session"), std::string::npos) << t->pane();
  t->keys("/exit Enter");
  EXPECT_TRUE(t->shows("EXIT=0", 60)) << t->pane();
}

}  // namespace
}  // namespace moat::e2e
