// tests/integration/e2e/mcp_host_test.cc: moatd runs a session's MCP servers inside its sandbox
// (sandbox/mcp_host.h, issue 29): the real moatd, a real session and the real test server
// (tests/support/mcp_test_server.cc), honest and hostile. Its tools reach the welcome under the
// policy, its calls go through the call gate and are audited, and what a hostile server tries
// fails, is recorded, and leaves the session going.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "e2e_support.h"
#include "moatd_fixture.h"
#include "pids_cap.h"

namespace moat::e2e {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

class McpHostTest : public MoatdProcess {
 protected:
  void SetUp() override {
    std::string why;
    if (!sandbox_available(&why)) GTEST_SKIP() << why;
    if (!fs::exists(mcp_test_server_bin()))
      GTEST_SKIP() << "no test server at " << mcp_test_server_bin();
    make_workspace();
    // A copy of its own: its directory is the server's `read` bind, and no other test's
    // process has its path.
    srv_dir_ = dir_.path() + "/srv";
    copy_mcp_test_server(srv_dir_);
    fs::permissions(dir_.path(), fs::perms::all, fs::perm_options::add);
  }
  // A user layer declaring the server "t" (`mode` its argument) and allowing its tools but
  // `image`, which a rule denies.
  void start_with_server(const std::string& mode, const std::string& extra = "") {
    fs::create_directories(dir_.path() + "/user");
    fs::create_directories(dir_.path() + "/system");
    std::ofstream(dir_.path() + "/user/mcp.toml")
        << "schema = 1\n" << extra << "\n[[mcp.server]]\nname = \"t\"\ncommand = [\"" << srv_dir_
        << "/mcp_test_server\", \"" << mode << "\"]\nread = [\"" << srv_dir_
        << "\"]\nstart = \"session\"\n\n"
        << "[[tool]]\nid = \"t-tools\"\ndecision = \"allow\"\ntool = [\"mcp:t:*\"]\n"
        << "unless = { tool = [\"mcp:t:image\"] }\n\n"
        << "[[tool]]\nid = \"no-image\"\ndecision = \"deny\"\ntool = [\"mcp:t:image\"]\n";
    start_moatd({"--audit-dir", dir_.path() + "/audit", "--system-policy-dir",
                 dir_.path() + "/system", "--user-policy-dir", dir_.path() + "/user"});
    ASSERT_TRUE(eventually([&] { return RawClient(socket_).connected(); })) << moatd_log();
  }
  json hello(RawClient& c) {
    c.send_json({{"type", "hello"}, {"version", 1}, {"workspace", ws_}, {"headless", true}});
    return c.read_frame(60000);
  }
  json call(RawClient& c, const std::string& id, const std::string& tool, const json& args) {
    c.send_json({{"type", "call"}, {"id", id}, {"tool", tool}, {"arguments", args}});
    return c.read_result(60000);
  }
  static std::string text_of(const json& result) {
    std::string text;
    for (const json& b : result.value("content", json::array())) text += b.value("text", "");
    return text;
  }
  static const json* tool_named(const json& welcome, const std::string& name) {
    for (const json& t : welcome["tools"])
      if (t.value("name", "") == name) return &t;
    return nullptr;
  }
  void bye(RawClient& c) {
    c.send_json({{"type", "bye"}});
    EXPECT_EQ(c.read_result().value("type", ""), "bye");
  }

  std::string srv_dir_;
};

// A server's tool: announced with its schema and its description marked as the server's, called
// through moatd, its decision before and its mcp.call after; the server's process is recorded
// by the exec watch under its start decision, and its stderr log sits beside the audit log.
TEST_F(McpHostTest, AServersToolIsCalledThroughMoatdAndAudited) {
  start_with_server("normal");
  RawClient c(socket_);
  const json welcome = hello(c);
  ASSERT_EQ(welcome.value("type", ""), "welcome") << welcome.dump() << moatd_log();
  const json* echo = tool_named(welcome, "mcp__t__echo");
  ASSERT_NE(echo, nullptr) << welcome["tools"].dump();
  EXPECT_NE((*echo)["description"].get<std::string>().find("MCP server t's own description"),
            std::string::npos);
  EXPECT_TRUE((*echo)["parameters"]["properties"].contains("text")) << echo->dump();
  const json r = call(c, "e1", "mcp__t__echo", {{"text", "hello from the model"}});
  EXPECT_FALSE(r.value("isError", true)) << r.dump();
  EXPECT_NE(text_of(r).find("hello from the model"), std::string::npos) << r.dump();
  bye(c);
  const std::vector<json> log = records_of(welcome["audit"].get<std::string>());
  const auto decisions = of_type(log, "decision");
  const auto calls = of_type(log, "mcp.call");
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0]["server"], "t");
  EXPECT_EQ(calls[0]["server_tool"], "echo");
  EXPECT_EQ(calls[0]["result_kind"], "text");
  EXPECT_GT(calls[0]["result_bytes"].get<long long>(), 0);
  EXPECT_NE(calls[0]["args"].get<std::string>().find("hello from the model"), std::string::npos);
  bool decided_first = false;
  for (const json& d : decisions)
    if (d["decision_id"] == calls[0]["decision_id"])
      decided_first = d["seq"] < calls[0]["seq"] && d["result"] == "allow";
  EXPECT_TRUE(decided_first) << "the call's allow decision precedes its record";
  const auto servers = of_type(log, "mcp.server");
  ASSERT_FALSE(servers.empty());
  EXPECT_EQ(servers[0]["event"], "start");
  const auto execs = of_type(log, "exec");
  bool server_exec = false;
  for (const json& e : execs)
    server_exec = server_exec || (e["call_id"] == servers[0]["call_id"] &&
                                  e["decision_id"] == servers[0]["decision_id"]);
  EXPECT_TRUE(server_exec) << "the server's process has its exec record";
  EXPECT_TRUE(fs::exists(servers[0]["log"].get<std::string>())) << servers[0].dump();
}

// A tool a rule denies is not announced, and a call of it is refused with its decision record.
TEST_F(McpHostTest, ADeniedToolIsNotAnnouncedAndIsRefused) {
  start_with_server("normal");
  RawClient c(socket_);
  const json welcome = hello(c);
  ASSERT_EQ(welcome.value("type", ""), "welcome") << welcome.dump() << moatd_log();
  EXPECT_EQ(tool_named(welcome, "mcp__t__image"), nullptr);
  const json r = call(c, "i1", "mcp__t__image", json::object());
  EXPECT_TRUE(r.value("isError", false)) << r.dump();
  bye(c);
  const auto log = records_of(welcome["audit"].get<std::string>());
  bool refused = false;
  for (const json& d : of_type(log, "decision"))
    refused = refused || (d["tool"] == "mcp__t__image" && d["result"] == "deny");
  EXPECT_TRUE(refused);
  EXPECT_TRUE(of_type(log, "mcp.call").empty());
}

// What the hostile server tries inside the sandbox fails: ~/.ssh is not there, nothing outside
// the workspace is writable, no network; a 100 MB result and a 64k-deep JSON are refused naming
// the server; the session goes on (the next call is answered).
TEST_F(McpHostTest, AHostileServersAttemptsFailAreRecordedAndTheSessionGoesOn) {
  start_with_server("normal");
  RawClient c(socket_);
  const json welcome = hello(c);
  ASSERT_EQ(welcome.value("type", ""), "welcome") << welcome.dump() << moatd_log();
  const json probe = call(c, "p1", "mcp__t__probe", json::object());
  ASSERT_FALSE(probe.value("isError", true)) << probe.dump();
  const std::string said = text_of(probe);
  const json seen = json::parse(said, nullptr, false);
  ASSERT_TRUE(seen.is_object()) << said;
  // Its HOME, and the workspace's parent when the workspace is under /tmp (as here), are in
  // the session's private /tmp, which it may write: the host's are not there.
  for (const char* what : {"read_ssh", "connect_ipv4", "connect_ipv6"})
    EXPECT_NE(seen.value(what, ""), "ok") << what << " succeeded inside the sandbox: " << said;
  const json big = call(c, "b1", "mcp__t__big", json::object());
  EXPECT_TRUE(big.value("isError", false));
  EXPECT_NE(text_of(big).find("mcp server t"), std::string::npos) << text_of(big);
  const json deep = call(c, "d1", "mcp__t__deep", json::object());
  EXPECT_TRUE(deep.value("isError", false));
  EXPECT_NE(text_of(deep).find("mcp server t"), std::string::npos) << text_of(deep);
  const json after = call(c, "e2", "mcp__t__echo", {{"text", "still here"}});
  EXPECT_FALSE(after.value("isError", true)) << after.dump();
  bye(c);
  const auto calls = of_type(records_of(welcome["audit"].get<std::string>()), "mcp.call");
  ASSERT_EQ(calls.size(), 4u);
  EXPECT_TRUE(calls[1]["is_error"].get<bool>());
  EXPECT_TRUE(calls[1].contains("error")) << calls[1].dump();
  EXPECT_TRUE(calls[2]["is_error"].get<bool>());
}

// The hostile server writes outside the workspace: the host's /var/tmp and /etc, the person's
// home, its own install (bound read-only) and the workspace's parent. Each write fails, or
// (under /tmp) lands in the session's private /tmp: no host file appears. The call is
// recorded with the paths it was given, after its decision, and the session goes on.
TEST_F(McpHostTest, AHostileServersWritesOutsideTheWorkspaceLeaveTheHostUntouched) {
  const std::string tag = "moat-mcp-probe-" + std::to_string(::getpid());
  const std::string var_tmp = "/var/tmp/" + tag;  // a host directory the sandbox does not show
  std::error_code ec;
  fs::create_directory(var_tmp, ec);
  fs::permissions(var_tmp, fs::perms::all, fs::perm_options::add, ec);
  std::vector<std::string> outside = {var_tmp + "/w", "/etc/" + tag, srv_dir_ + "/w"};
  const std::string home = env_or("HOME", "");
  if (!home.empty() && home.rfind("/tmp/", 0) != 0) outside.push_back(home + "/" + tag);
  const std::string parent = dir_.path() + "/w";  // under /tmp: the session's private /tmp
  start_with_server("normal");
  RawClient c(socket_);
  const json welcome = hello(c);
  ASSERT_EQ(welcome.value("type", ""), "welcome") << welcome.dump() << moatd_log();
  json paths = outside;
  paths.push_back(parent);
  const json probe = call(c, "w1", "mcp__t__probe", {{"write", paths}});
  ASSERT_FALSE(probe.value("isError", true)) << probe.dump();
  const json seen = json::parse(text_of(probe), nullptr, false);
  ASSERT_TRUE(seen.is_object() && seen.contains("written")) << text_of(probe);
  for (const std::string& p : outside) {
    EXPECT_NE(seen["written"].value(p, "ok"), "ok") << p << " was written inside the sandbox";
    EXPECT_FALSE(fs::exists(p)) << p << " appeared on the host";
  }
  EXPECT_FALSE(fs::exists(parent)) << "the workspace's parent on the host was written";
  const json after = call(c, "w2", "mcp__t__echo", {{"text", "still here"}});
  EXPECT_FALSE(after.value("isError", true)) << after.dump();
  bye(c);
  for (const std::string& p : outside) fs::remove(p, ec);
  fs::remove_all(var_tmp, ec);
  const auto log = records_of(welcome["audit"].get<std::string>());
  const auto calls = of_type(log, "mcp.call");
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0]["server_tool"], "probe");
  EXPECT_NE(calls[0]["args"].get<std::string>().find(var_tmp), std::string::npos)
      << calls[0].dump();
  bool decided = false;
  for (const json& d : of_type(log, "decision"))
    decided = decided || (d["decision_id"] == calls[0]["decision_id"] && d["seq"] < calls[0]["seq"]);
  EXPECT_TRUE(decided) << "the probe's decision precedes its record";
}

// A tool whose title and 100 KB description are full of terminal escapes (OSC title, clear
// screen, colours, the C1 CSI U+009B) reaches the welcome bounded and with no control byte:
// shown as text, it cannot act on a terminal. Its mcp.server record names it.
TEST_F(McpHostTest, AnEscapeLadenDescriptionReachesTheWelcomeBoundedAndInert) {
  start_with_server("escapes");
  RawClient c(socket_);
  const json welcome = hello(c);
  ASSERT_EQ(welcome.value("type", ""), "welcome") << welcome.dump() << moatd_log();
  const json* esc = tool_named(welcome, "mcp__t__esc");
  ASSERT_NE(esc, nullptr) << welcome["tools"].dump();
  const std::string text = (*esc)["description"].get<std::string>();
  EXPECT_LE(text.size(), 4096u + 100u) << "bounded near ServerLimits::max_description_bytes";
  for (const std::string bad : {"\x1b", "\x07", "\xc2\x9b"})
    EXPECT_EQ(text.find(bad), std::string::npos)
        << "a raw control byte reached the welcome: " << json(text.substr(0, 200)).dump();
  EXPECT_NE(text.find("RED"), std::string::npos) << "the text itself is kept";
  const json after = call(c, "e1", "mcp__t__esc", json::object());
  EXPECT_TRUE(after.value("isError", false)) << "the server has no such tool to call";
  bye(c);
  bool named = false;
  for (const json& r : of_type(records_of(welcome["audit"].get<std::string>()), "mcp.server"))
    named = named || r.dump().find("esc") != std::string::npos;
  EXPECT_TRUE(named) << "the server's tools are recorded";
}

// A tool whose input schema holds 7 MiB (under the 8 MiB frame bound) would go to the model
// with every request: it is not offered (ServerLimits::max_schema_bytes), the server's other
// tools are, and the session goes on.
TEST_F(McpHostTest, AToolWithAHugeInputSchemaIsNotOffered) {
  start_with_server("huge-schema");
  RawClient c(socket_);
  const json welcome = hello(c);
  ASSERT_EQ(welcome.value("type", ""), "welcome") << welcome.dump().substr(0, 500) << moatd_log();
  EXPECT_EQ(tool_named(welcome, "mcp__t__wide"), nullptr) << "the 7 MiB schema was offered";
  EXPECT_LT(welcome.dump().size(), 1u << 20);
  const json r = call(c, "e1", "mcp__t__echo", {{"text", "still here"}});
  EXPECT_FALSE(r.value("isError", true)) << r.dump();
  bye(c);
  // The client's bound dropped it before the host's list: the server's tools record says so
  // (before, only moatd's diagnostic log did).
  std::string why;
  for (const json& s : of_type(records_of(welcome["audit"].get<std::string>()), "mcp.server"))
    if (s["event"] == "tools") why = s.value("error", "");
  EXPECT_NE(why.find("dropped as listed: wide (its inputSchema is "), std::string::npos) << why;
  EXPECT_NE(why.find("over max_schema_bytes 65536)"), std::string::npos) << why;
}

// A server that dies at every call is started again at most McpHost::kMaxRestarts times; each
// call gets an error naming it, and then one saying it is not started again.
TEST_F(McpHostTest, AServerThatCrashesIsRestartedABoundedNumberOfTimes) {
  start_with_server("exit-on-call");
  RawClient c(socket_);
  const json welcome = hello(c);
  ASSERT_EQ(welcome.value("type", ""), "welcome") << welcome.dump() << moatd_log();
  std::string last;
  for (int i = 0; i < 5; ++i) {
    const json r = call(c, "x" + std::to_string(i), "mcp__t__echo", {{"text", "x"}});
    EXPECT_TRUE(r.value("isError", false)) << r.dump();
    last = text_of(r);
    EXPECT_NE(last.find("mcp server t"), std::string::npos) << last;
  }
  EXPECT_NE(last.find("not started again"), std::string::npos) << last;
  bye(c);
  int starts = 0;
  for (const json& s : of_type(records_of(welcome["audit"].get<std::string>()), "mcp.server"))
    starts += s["event"] == "start";
  EXPECT_EQ(starts, 4) << "the first start and 3 restarts";
}

// A server started again at a call while moatd has no thread to spare: that call fails naming
// why, and moatd goes on. The server's exec thread threw std::system_error when its exec watch's
// thread could not start: std::terminate of moatd, and every session on it.
TEST_F(McpHostTest, AServerStartedAgainWithNoThreadForItsWatchFailsThatCallAlone) {
  start_with_server("exit-on-call");
  RawClient c(socket_);
  const json welcome = hello(c);
  ASSERT_EQ(welcome.value("type", ""), "welcome") << welcome.dump() << moatd_log();
  EXPECT_TRUE(call(c, "x0", "mcp__t__echo", {{"text", "x"}}).value("isError", false));
  MOAT_CAP_OR_SKIP(cap, pid_);
  ASSERT_TRUE(cap.allow_more(3));  // the call's thread, the server's log pump and exec threads
  const json r = call(c, "x1", "mcp__t__echo", {{"text", "x"}});
  EXPECT_NE(r.dump().find("Resource temporarily unavailable"), std::string::npos)
      << r.dump() << moatd_log();
  ASSERT_TRUE(moatd_alive()) << moatd_log();
  ASSERT_TRUE(cap.lift());
  c.send_json(
      {{"type", "call"}, {"id", "b1"}, {"tool", "bash"}, {"arguments", {{"command", "echo ran"}}}});
  EXPECT_NE(c.read_result(60000).dump().find("ran"), std::string::npos) << moatd_log();
}

// A daemon the server started (fork, setsid, fork) outlives its call but not the session.
TEST_F(McpHostTest, ADaemonTheServerStartedDiesWithTheSession) {
  start_with_server("normal");
  auto server_processes = [&] {
    int n = 0;
    for (const auto& e : fs::directory_iterator("/proc")) {
      std::ifstream in(e.path() / "cmdline");
      std::string cmd((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      n += cmd.rfind(srv_dir_ + "/mcp_test_server", 0) == 0;
    }
    return n;
  };
  {
    RawClient c(socket_);
    const json welcome = hello(c);
    ASSERT_EQ(welcome.value("type", ""), "welcome") << welcome.dump() << moatd_log();
    const json r = call(c, "dm", "mcp__t__daemon", json::object());
    EXPECT_FALSE(r.value("isError", true)) << r.dump();
    EXPECT_GE(server_processes(), 2) << "the server and its daemon run";
    bye(c);
  }
  EXPECT_TRUE(eventually([&] { return server_processes() == 0; }, std::chrono::seconds(10)))
      << server_processes() << " of the server's processes outlived the session";
}

}  // namespace
}  // namespace moat::e2e
