// tests/integration/e2e/moatd_mcp_test.cc: what moatd's MCP host gives and bounds for a server
// (sandbox/mcp_host.h): its stderr log's bound, the person's variables its declaration names
// (and nothing else, and no value in the audit log), its restart backoff. The real moatd, a
// real session and the real test server (tests/support/mcp_test_server.cc).
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "e2e_support.h"
#include "moatd_fixture.h"
#include "mocked_run.h"

namespace moat::e2e {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

std::vector<json> log_records(const std::string& path, const std::string& type) {
  std::ifstream in(path);
  std::vector<json> out;
  for (std::string line; std::getline(in, line);) {
    json r = json::parse(line, nullptr, false);
    if (r.is_object() && r.value("type", "") == type) out.push_back(std::move(r));
  }
  return out;
}

std::string test_server() {
  return (fs::path(moatd_bin()).parent_path().parent_path() / "tests/unit/tools/mcp_test_server")
      .string();
}

// A server declaration of the test server copied to `dir` (its `read` bind), with `extra`
// lines, and a rule allowing its tools.
std::string server_toml(const std::string& name, const std::string& dir, const std::string& mode,
                        const std::string& extra = "") {
  return "\n[[mcp.server]]\nname = \"" + name + "\"\ncommand = [\"" + dir +
         "/mcp_test_server\", \"" + mode + "\"]\nread = [\"" + dir + "\"]\nstart = \"session\"\n" +
         extra + "\n[[tool]]\nid = \"" + name +
         "-tools\"\ndecision = \"allow\"\ntool = [\"mcp:" + name + ":*\"]\n";
}

class McpHostHardening : public MoatdProcess {
 protected:
  void SetUp() override {
    std::string why;
    if (!sandbox_available(&why)) GTEST_SKIP() << why;
    if (!fs::exists(test_server())) GTEST_SKIP() << "no test server at " << test_server();
    make_workspace();
    srv_dir_ = dir_.path() + "/srv";
    fs::create_directories(srv_dir_);
    fs::copy_file(test_server(), srv_dir_ + "/mcp_test_server");
    fs::permissions(dir_.path(), fs::perms::all, fs::perm_options::add);
    fs::permissions(srv_dir_, fs::perms::all, fs::perm_options::add);
    fs::create_directories(dir_.path() + "/user");
    fs::create_directories(dir_.path() + "/system");
  }
  // moatd with `user_toml` as the user layer, and `flags` after.
  void start_with(const std::string& user_toml, std::vector<std::string> flags = {}) {
    std::ofstream(dir_.path() + "/user/mcp.toml") << "schema = 1\n" << user_toml;
    std::vector<std::string> all = {"--audit-dir",         dir_.path() + "/audit",
                                    "--system-policy-dir", dir_.path() + "/system",
                                    "--user-policy-dir",   dir_.path() + "/user"};
    all.insert(all.end(), flags.begin(), flags.end());
    start_moatd(all);
    ASSERT_TRUE(eventually([&] { return RawClient(socket_).connected(); })) << moatd_log();
  }
  json hello(RawClient& c, const json& env = json::object()) {
    json h = {{"type", "hello"}, {"version", 1}, {"workspace", ws_}, {"headless", true}};
    if (!env.empty()) h["env"] = env;
    c.send_json(h);
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
  void bye(RawClient& c) {
    c.send_json({{"type", "bye"}});
    EXPECT_EQ(c.read_result().value("type", ""), "bye");
  }

  std::string srv_dir_;
};

// A server that writes 8 MiB to stderr: its log keeps the first 4 MiB (McpHost::kMaxLogBytes)
// and a line saying how many bytes were dropped; the server and the session go on.
TEST_F(McpHostHardening, AServersStderrLogKeepsItsFirstBytesAndSaysHowManyWereDropped) {
  start_with(server_toml("t", srv_dir_, "stderr-flood"));
  RawClient c(socket_);
  const json welcome = hello(c);
  ASSERT_EQ(welcome.value("type", ""), "welcome") << welcome.dump() << moatd_log();
  const json r = call(c, "e1", "mcp__t__echo", {{"text", "after the flood"}});
  EXPECT_NE(text_of(r).find("after the flood"), std::string::npos) << r.dump();
  bye(c);
  const auto servers = log_records(welcome["audit"].get<std::string>(), "mcp.server");
  ASSERT_FALSE(servers.empty());
  const std::string log = servers[0]["log"].get<std::string>();
  const std::string text = read_file(log);
  const std::uint64_t kept = 4u << 20, written = 8192u * 1024u;
  EXPECT_LE(text.size(), kept + 200) << log;
  EXPECT_EQ(text.substr(0, 1023), std::string(1023, 'e'));
  EXPECT_NE(text.find("[moat: " + std::to_string(written - kept) +
                      " bytes of this server's stderr dropped"),
            std::string::npos)
      << text.substr(text.size() > 300 ? text.size() - 300 : 0);
}

// A call whose server sends a progress notification every 20 ms: moatd forwards at most one per
// ticks::kProgressForward (100 ms) and the last, which says the work is done, each as
// "progress N/TOTAL message" with the numbers in their shortest form.
TEST_F(McpHostHardening, ProgressIsForwardedAtMostOncePerTickWithItsNumbersShort) {
  start_with(server_toml("t", srv_dir_, "normal"));
  RawClient c(socket_);
  const json welcome = hello(c);
  ASSERT_EQ(welcome.value("type", ""), "welcome") << welcome.dump() << moatd_log();
  const auto t0 = std::chrono::steady_clock::now();
  c.send_json(
      {{"type", "call"}, {"id", "p1"}, {"tool", "mcp__t__slow"}, {"arguments", {{"steps", 60}}}});
  std::vector<std::string> chunks;
  json frame;
  for (;;) {
    frame = c.read_frame(60000);
    if (frame.value("type", "") != "progress") break;
    if (!frame.value("chunk", "").empty()) chunks.push_back(frame.value("chunk", ""));
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(frame.value("type", ""), "result") << frame.dump();
  ASSERT_FALSE(chunks.empty());
  EXPECT_LE(chunks.size(), static_cast<std::size_t>(seconds * 10) + 2)
      << "60 notifications in " << seconds << " s, forwarded " << chunks.size();
  EXPECT_EQ(chunks.back(), "progress 60/60 step 60\n");
  for (const auto& ch : chunks) EXPECT_EQ(ch.find(".000000"), std::string::npos) << ch;
  bye(c);
}

// A tool whose inputSchema is 7 MiB (it would go to the model with every request) is not
// offered; the server's other tools are.
TEST_F(McpHostHardening, AToolWhoseSchemaIsHugeIsNotOffered) {
  start_with(server_toml("t", srv_dir_, "huge-schema"));
  RawClient c(socket_);
  const json welcome = hello(c);
  ASSERT_EQ(welcome.value("type", ""), "welcome") << welcome.dump().substr(0, 300) << moatd_log();
  bool wide = false, echo = false;
  for (const json& t : welcome["tools"]) {
    wide = wide || t.value("name", "") == "mcp__t__wide";
    echo = echo || t.value("name", "") == "mcp__t__echo";
  }
  EXPECT_FALSE(wide) << "a 7 MiB schema was offered";
  EXPECT_TRUE(echo);
  EXPECT_LT(welcome.dump().size(), 2u << 20);
  bye(c);
}

// env = [NAMES] in the user layer: the hello's value of a declared name reaches that server;
// a name the hello sends but no declaration names, and a name only a --policy file's server
// declares (not a system or user layer), reach no server; no value reaches the audit log,
// whose start record names what was given.
TEST_F(McpHostHardening, OnlyATrustedDeclarationsVariablesReachItsServerAndNoValueIsAudited) {
  const std::string cli = dir_.path() + "/cli.toml";
  // Its declaration only: a --policy file narrows, so the user layer's rule allows its tools.
  const std::string c_toml = server_toml("c", srv_dir_, "normal", "env = [\"MOAT_T_CLI\"]\n");
  std::ofstream(cli) << "schema = 1\n" << c_toml.substr(0, c_toml.find("[[tool]]"));
  const std::string t_env = "env = [\"MOAT_T_DECLARED\", \"MOAT_T_UNSET\"]\n";
  start_with(server_toml("t", srv_dir_, "normal", t_env) + c_toml.substr(c_toml.find("[[tool]]")),
             {"--policy", cli});
  RawClient c(socket_);
  const json welcome = hello(c, {{"MOAT_T_DECLARED", "value-d-7f3a"},
                                 {"MOAT_T_UNDECLARED", "value-u-91c2"},
                                 {"MOAT_T_CLI", "value-c-55e0"}});
  ASSERT_EQ(welcome.value("type", ""), "welcome") << welcome.dump() << moatd_log();
  const json t_reply = call(c, "t1", "mcp__t__env", json::object());
  const json c_reply = call(c, "c1", "mcp__c__env", json::object());
  const json t = json::parse(text_of(t_reply), nullptr, false);
  const json cs = json::parse(text_of(c_reply), nullptr, false);
  ASSERT_TRUE(t.is_array() && cs.is_array()) << t_reply.dump() << c_reply.dump();
  auto has = [](const json& names, const char* n) {
    return std::find(names.begin(), names.end(), json(n)) != names.end();
  };
  EXPECT_TRUE(has(t, "MOAT_T_DECLARED")) << t.dump();
  for (const char* n : {"MOAT_T_UNDECLARED", "MOAT_T_CLI", "MOAT_T_UNSET"})
    EXPECT_FALSE(has(t, n) || has(cs, n)) << n << ": " << t.dump() << cs.dump();
  EXPECT_FALSE(has(cs, "MOAT_T_DECLARED")) << cs.dump();
  bye(c);
  const std::string audit = read_file(welcome["audit"].get<std::string>());
  for (const char* value : {"value-d-7f3a", "value-u-91c2", "value-c-55e0"})
    EXPECT_EQ(audit.find(value), std::string::npos) << value << " is in the audit log";
  bool named = false;
  for (const json& s : log_records(welcome["audit"].get<std::string>(), "mcp.server"))
    if (s["server"] == "t" && s["event"] == "start")
      named = s.value("env", json()) == json::array({"MOAT_T_DECLARED"});
  EXPECT_TRUE(named) << "t's start record names the variable it was given";
}

// A server that dies at every call is restarted after the host's backoff, doubling: with
// --test-mcp-restart-backoff 20 the three restarts wait 20 + 40 + 80 ms, not the product's
// 200 + 400 + 800.
TEST_F(McpHostHardening, RestartsWaitTheHostsBackoff) {
  start_with(server_toml("t", srv_dir_, "exit-on-call"), {"--test-mcp-restart-backoff", "20"});
  RawClient c(socket_);
  const json welcome = hello(c);
  ASSERT_EQ(welcome.value("type", ""), "welcome") << welcome.dump() << moatd_log();
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 4; ++i) {
    const json r = call(c, "x" + std::to_string(i), "mcp__t__echo", {{"text", "x"}});
    EXPECT_TRUE(r.value("isError", false)) << r.dump();
  }
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
          .count();
  EXPECT_GE(ms, 140);
  EXPECT_LT(ms, 1400) << "the product's backoff was waited";
  bye(c);
  int starts = 0;
  for (const json& s : log_records(welcome["audit"].get<std::string>(), "mcp.server"))
    starts += s["event"] == "start";
  EXPECT_EQ(starts, 4) << "the first start and 3 restarts";
}

// The start record's "limits" of server `name` (sandbox/mcp_resources.h).
json start_limits(const std::string& audit, const std::string& name) {
  for (const json& s : log_records(audit, "mcp.server"))
    if (s["server"] == name && s["event"] == "start") return s.value("limits", json());
  return json();
}

bool memory_cgroup_writable() { return access("/sys/fs/cgroup/memory", W_OK) == 0; }

// resources = { pids = 4 } on a server: its processes cannot fork past it (RLIMIT_NPROC; as
// root also pids.max of its own child cgroup), while a bash call of the same session forks
// eight under the session's 512. Its start record says what applied, and its child cgroup is
// gone with the session.
TEST_F(McpHostHardening, AServersPidsLimitStopsItsForksButNotTheSessionsBashCall) {
  start_with(server_toml("t", srv_dir_, "spawn", "resources = { pids = 4 }\n"));
  RawClient c(socket_);
  const json welcome = hello(c);
  ASSERT_EQ(welcome.value("type", ""), "welcome") << welcome.dump() << moatd_log();
  const json r = call(c, "s1", "mcp__t__spawn", {{"children", 8}});
  const json got = r.value("details", json::object()).value("structuredContent", json::object());
  EXPECT_LT(got.value("forked", 99), 8) << r.dump();
  EXPECT_EQ(got.value("fork_error", ""), "EAGAIN") << r.dump();
  const json b = call(c, "b1", "bash",
                      {{"command", "for i in 1 2 3 4 5 6 7 8; do sleep 0.3 & done; wait; "
                                   "echo forked-eight"}});
  EXPECT_FALSE(b.value("isError", true)) << b.dump();
  EXPECT_NE(text_of(b).find("forked-eight"), std::string::npos) << b.dump();
  bye(c);
  const std::string audit = welcome["audit"].get<std::string>();
  const json limits = start_limits(audit, "t");
  EXPECT_EQ(limits["rlimits"].value("pids", 0), 4) << limits.dump();
  EXPECT_EQ(limits["rlimits"].value("open_files", 0), 1024) << "the session's, unnarrowed";
  const json start = log_records(audit, "session.start").at(0);
  const json dirs = start["sandbox"].value("cgroup_dirs", json::array());
  if (dirs.empty()) {
    EXPECT_TRUE(limits.contains("cgroup_error")) << limits.dump();
  } else {
    EXPECT_EQ(limits["cgroup"].value("pids", 0), 4) << limits.dump();
    for (const json& d : dirs)
      EXPECT_FALSE(fs::exists(d.get<std::string>() + "/mcp-t")) << d << " is left";
  }
}

// resources = { memory = "200MiB" } as root (a session cgroup): the server's own child cgroup
// bounds the sum of its processes, so four children writing 64 MiB each do not all get there,
// though each is far below the 200 MiB address-space rlimit a process also gets.
TEST_F(McpHostHardening, AServersMemoryLimitBoundsTheSumOfItsProcessesInItsOwnCgroup) {
  if (!memory_cgroup_writable())
    GTEST_SKIP() << "no writable cgroup v1 memory hierarchy (needs root): rlimits only";
  start_with(server_toml("t", srv_dir_, "spawn", "resources = { memory = \"200MiB\" }\n"));
  RawClient c(socket_);
  const json welcome = hello(c);
  ASSERT_EQ(welcome.value("type", ""), "welcome") << welcome.dump() << moatd_log();
  const json r = call(c, "m1", "mcp__t__spawn", {{"children", 4}, {"bytes", 64u << 20}});
  const json got = r.value("details", json::object()).value("structuredContent", json::object());
  EXPECT_EQ(got.value("forked", 0), 4) << r.dump();
  EXPECT_LT(got.value("touched", 99), 4) << r.dump();
  bye(c);
  const json limits = start_limits(welcome["audit"].get<std::string>(), "t");
  EXPECT_EQ(limits["cgroup"].value("memory", 0), 200u << 20) << limits.dump();
  EXPECT_EQ(limits["rlimits"].value("memory", 0), 200u << 20) << limits.dump();
}

// moat run sends the person's variables its user layer's servers name: the model's call of
// the server's env tool sees the declared one and not another of moat's variables; the audit
// log holds no value.
class McpRunEnv : public MockedRun {};

TEST_F(McpRunEnv, MoatRunSendsTheVariablesItsUserLayersServersName) {
  start(agent::providers::Api::kOpenAiChat);
  if (IsSkipped()) return;
  if (!fs::exists(test_server())) GTEST_SKIP() << "no test server at " << test_server();
  const std::string srv = dir_.path() + "/srv";
  fs::create_directories(srv);
  fs::copy_file(test_server(), srv + "/mcp_test_server");
  fs::permissions(dir_.path(), fs::perms::all, fs::perm_options::add);
  fs::permissions(srv, fs::perms::all, fs::perm_options::add);
  fs::create_directories(dir_.path() + "/config/moat/policy.d");
  std::ofstream(dir_.path() + "/config/moat/policy.d/mcp.toml")
      << "schema = 1\n"
      << server_toml("t", srv, "normal", "env = [\"MOAT_T_PASSED\"]\n");
  testing::ScriptedTurn turn;
  turn.calls.push_back({"e1", "mcp__t__env", json::object()});
  server_->push_turn(turn);
  server_->push_turn(text_turn("Done."));
  std::vector<std::string> vars = env();
  vars.push_back("MOAT_T_PASSED=value-p-3b1d");
  vars.push_back("MOAT_T_OTHER=value-o-8e27");
  std::vector<std::string> argv = run_argv({"--headless"});
  argv.push_back("do the task");
  const SplitRun r = run_split(argv, vars, 120, "", false);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const auto requests = server_->requests();
  ASSERT_EQ(requests.size(), 2u) << r.err;
  EXPECT_NE(requests[1].body.find("MOAT_T_PASSED"), std::string::npos) << requests[1].body;
  EXPECT_EQ(requests[1].body.find("MOAT_T_OTHER"), std::string::npos) << requests[1].body;
  for (const auto& e : fs::recursive_directory_iterator(dir_.path() + "/audit")) {
    if (e.is_regular_file()) {
      EXPECT_EQ(read_file(e.path().string()).find("value-p-3b1d"), std::string::npos) << e.path();
    }
  }
}

}  // namespace
}  // namespace moat::e2e
