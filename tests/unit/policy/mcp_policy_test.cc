// tests/unit/policy/mcp_policy_test.cc: [[mcp.server]] declarations (every parse error at its
// file:line:col), which layer's servers count (trust pins covering .mcp.json, the system
// layer's managed_mcp_servers_only), [[tool]] argument conditions and annotation hints.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "policy/layer.h"
#include "policy/mcp_import.h"
#include "policy/mcp_servers.h"
#include "policy/toml_load.h"
#include "tests/unit/policy/policy_fixture.h"

namespace moat::policy {
namespace {

using ::testing::HasSubstr;
using testing::PolicyWorld;
using testing::write_file;
using json = nlohmann::json;

std::string error_of(const std::string& text, bool repository = false) {
  ParseOptions o;
  o.file = "t.toml";
  o.repository = repository;
  auto r = parse_policy_text(text, o, nullptr);
  EXPECT_FALSE(r.has_value()) << text;
  return r ? "" : r.error().message();
}

constexpr const char* kHead = "schema = 1\n[[mcp.server]]\n";

TEST(McpConfig, ReadsEveryKey) {
  ParseOptions o;
  o.file = "t.toml";
  auto p = parse_policy_text(std::string(kHead) +
                                 "name = \"files\"\ncommand = [\"node\", \"/opt/fs.js\", \"/\"]\n"
                                 "env = [\"GITHUB_TOKEN\"]\nread = [\"/opt/mcp\"]\n"
                                 "start = \"session\"\nresources = { memory = \"1GiB\" }\n"
                                 "[[mcp.server]]\nname = \"remote\"\nurl = \"https://x.test/mcp\"\n",
                             o, nullptr);
  ASSERT_TRUE(p) << p.error().message();
  ASSERT_EQ(p->mcp.server.size(), 2u);
  const auto& s = p->mcp.server[0];
  EXPECT_EQ(s.command, (Strings{"node", "/opt/fs.js", "/"}));
  EXPECT_EQ(s.env, Strings{"GITHUB_TOKEN"});
  EXPECT_EQ(s.read, Strings{"/opt/mcp"});
  EXPECT_EQ(s.start, "session");
  EXPECT_EQ(*s.resources.memory, std::int64_t{1} << 30);
  EXPECT_EQ(s.pos.line, 2);
  EXPECT_EQ(p->mcp.server[1].url, "https://x.test/mcp");
  EXPECT_EQ(p->mcp.server[1].start, "on-use");
}

TEST(McpConfig, EveryBadDeclarationNamesItsPlaceKeyAndWhatIsAccepted) {
  struct Case {
    std::string body, expect;
    bool repository = false;
  };
  const Case cases[] = {
      {"name = \"a__b\"\ncommand = [\"x\"]\n", "t.toml:3:8: mcp.server[0].name: \"a__b\": expected 1 to 32"},
      {"name = \"a b\"\ncommand = [\"x\"]\n", "t.toml:3:8: mcp.server[0].name"},
      {"name = \"a\"\ncommand = [\"x\"]\nurl = \"https://x\"\n", "t.toml:2:1: mcp.server[0]: give either command"},
      {"name = \"a\"\n", "t.toml:2:1: mcp.server[0]: needs command"},
      {"name = \"a\"\ncommand = []\n", "t.toml:4:11: mcp.server[0].command: expected a non-empty argv"},
      {"name = \"a\"\nurl = \"ftp://x\"\n", "t.toml:4:7: mcp.server[0].url: expected an http:// or https:// URL"},
      {"name = \"a\"\ncommand = [\"x\"]\nread = [\"opt/mcp\"]\n", "t.toml:5:8: mcp.server[0].read: expected absolute directories, got \"opt/mcp\""},
      {"name = \"a\"\ncommand = [\"x\"]\nstart = \"later\"\n", "t.toml:5:9: mcp.server[0].start"},
      {"name = \"a\"\ncommand = [\"x\"]\nenv = [\"TOKEN\"]\n", "t.toml:5:7: mcp.server[0].env: a repository's server may not take", true},
      {"name = \"a\"\ncommand = [\"x\"]\nargs = [\"y\"]\n", "t.toml:5:1: mcp.server[0].args: unknown key; accepted keys here: name, command, url"},
      {"name = \"a\"\ncommand = [\"x\"]\n[[mcp.server]]\nname = \"a\"\ncommand = [\"y\"]\n", "t.toml:5:1: mcp.server[1].name: \"a\" is already declared at line 2"},
  };
  for (const auto& c : cases) {
    const std::string msg = error_of(kHead + c.body, c.repository);
    EXPECT_THAT(msg, HasSubstr(c.expect)) << c.body;
  }
  EXPECT_THAT(error_of(std::string(kHead) + "name = \"a\"\ncommand = [\"x\"]\nstart = \"later\"\n"),
              HasSubstr("\"session\", \"on-use\""));
  // The same declaration with env is fine outside a repository.
  ParseOptions o;
  EXPECT_TRUE(parse_policy_text(std::string(kHead) + "name = \"a\"\ncommand = [\"x\"]\nenv = [\"T\"]\n",
                                o, nullptr));
}

TEST(McpConfig, TooManyServersOrWordsAreRefused) {
  std::string text = "schema = 1\n";
  for (std::size_t i = 0; i <= kMaxMcpServers; ++i)
    text += "[[mcp.server]]\nname = \"s" + std::to_string(i) + "\"\ncommand = [\"x\"]\n";
  EXPECT_THAT(error_of(text), HasSubstr("more than 32 servers"));
  std::string argv = "\"x\"";
  for (std::size_t i = 0; i < kMaxMcpArgv; ++i) argv += ", \"y\"";
  EXPECT_THAT(error_of(std::string(kHead) + "name = \"a\"\ncommand = [" + argv + "]\n"),
              HasSubstr("mcp.server[0].command: more than 256 words"));
}

TEST(McpImport, ReadsBothShapesAndRefusesBadEntriesByPointer) {
  auto claude = import_mcp_json(
      R"({"mcpServers": {"gh": {"command": "npx", "args": ["-y", "srv"], "env": {"T": "v"}}}})",
      "/w/.mcp.json", nullptr);
  ASSERT_TRUE(claude) << claude.error().message();
  ASSERT_EQ(claude->size(), 1u);
  EXPECT_EQ((*claude)[0].command, (Strings{"npx", "-y", "srv"}));
  EXPECT_TRUE((*claude)[0].env.empty());  // a repository passes none of the person's variables
  auto vscode = import_mcp_json(
      "{\n \"servers\": {\n  \"web\": {\"type\": \"http\", \"url\": \"https://x.test/mcp\"}}}",
      "/w/.vscode/mcp.json", nullptr);
  ASSERT_TRUE(vscode) << vscode.error().message();
  EXPECT_EQ((*vscode)[0].url, "https://x.test/mcp");
  EXPECT_EQ((*vscode)[0].pos.line, 3);
  auto bad = import_mcp_json("{\n\"servers\": {\"x\": {\"type\": \"sse\", \"url\": \"https://a\"}}}",
                             "/w/.vscode/mcp.json", nullptr);
  ASSERT_FALSE(bad);
  EXPECT_THAT(bad.error().message(), HasSubstr("/w/.vscode/mcp.json:2:13: /servers/x/url"));
  auto name = import_mcp_json(R"({"mcpServers": {"a__b": {"command": "x"}}})", "/w/.mcp.json", nullptr);
  ASSERT_FALSE(name);
  EXPECT_THAT(name.error().message(), HasSubstr("/mcpServers/a__b: expected a name"));
  EXPECT_FALSE(import_mcp_json("[1]", "/w/.mcp.json", nullptr));
}

// A world with a user layer; servers() is the effective list of a fresh load.
class McpLayersTest : public ::testing::Test {
 protected:
  std::vector<std::string> servers() {
    auto p = w_.load();
    std::vector<std::string> out;
    if (!p) return out;
    for (const auto& s : p->mcp_servers()) out.push_back(s.name + "@" + s.layer);
    return out;
  }
  void pin() {
    auto t = project_trust(w_.workspace, w_.options.trust_dir);
    ASSERT_TRUE(t);
    ASSERT_TRUE(pin_project(w_.workspace, w_.options.trust_dir, t->sha256));
  }
  PolicyWorld w_;
  const std::string mcp_json_ = w_.workspace + "/.mcp.json";
};

TEST_F(McpLayersTest, ARepositoryMcpJsonCountsOnlyOnceItsContentIsPinned) {
  write_file(mcp_json_, R"({"mcpServers": {"repo": {"command": "node", "args": ["s.js"]}}})");
  auto t = project_trust(w_.workspace, w_.options.trust_dir);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->state, TrustState::kUntrusted);  // a project with only .mcp.json has a layer
  EXPECT_EQ(t->imports, std::vector<std::string>{mcp_json_});
  EXPECT_TRUE(servers().empty());
  pin();
  EXPECT_EQ(servers(), std::vector<std::string>{"repo@project"});
  auto p = w_.load();
  EXPECT_EQ(p->mcp_servers()[0].argv, (Strings{"node", "s.js"}));
  EXPECT_EQ(p->mcp_servers()[0].pos.file, mcp_json_);
  // Changing .mcp.json after the pin makes the project untrusted again.
  write_file(mcp_json_, R"({"mcpServers": {"repo": {"command": "sh", "args": ["-c", "evil"]}}})");
  EXPECT_EQ(project_trust(w_.workspace, w_.options.trust_dir)->state, TrustState::kChanged);
  EXPECT_TRUE(servers().empty());
}

// A repository's server (pinned .mcp.json) may change with the repository after the pin (the
// pin covers the declaration, not the code it starts): its readOnlyHint loosens nothing, so a
// tool it claims read-only still gets defaults.tool (ask). The user's server keeps the hint.
TEST_F(McpLayersTest, ARepositoryServersReadOnlyHintDoesNotLoosenItsDefault) {
  write_file(mcp_json_, R"({"mcpServers": {"repo": {"command": "node", "args": ["s.js"]}}})");
  write_file(w_.options.user_dir + "/u.toml",
             std::string(kHead) + "name = \"mine\"\ncommand = [\"node\"]\n");
  pin();
  auto p = w_.load();
  ASSERT_TRUE(p);
  const ToolHints ro{true, false};
  const Decision repo = p->decide_tool("mcp:repo:delete_everything", json::object(), ro);
  EXPECT_EQ(repo.verdict, Verdict::kAsk) << repo.deciding.id;
  EXPECT_EQ(repo.deciding.id, "defaults.tool");
  EXPECT_EQ(p->decide_tool("mcp:mine:read", json::object(), ro).verdict, Verdict::kAllow);
  // Even where defaults.tool allows, a tool it claims read-only counts as unhinted: ask.
  write_file(w_.options.user_dir + "/d.toml", "schema = 1\ndefaults = { tool = \"allow\" }\n");
  p = w_.load();
  ASSERT_TRUE(p);
  EXPECT_EQ(p->decide_tool("mcp:repo:x", json::object(), ro).verdict, Verdict::kAsk);
}

TEST_F(McpLayersTest, AddingAnMcpJsonBesideAPinnedPolicyUnpinsIt) {
  write_file(w_.workspace + "/.moat/policy.toml",
             std::string(kHead) + "name = \"proj\"\ncommand = [\"node\"]\n");
  pin();
  EXPECT_EQ(servers(), std::vector<std::string>{"proj@project"});
  write_file(w_.workspace + "/.vscode/mcp.json", R"({"servers": {"more": {"command": "x"}}})");
  EXPECT_EQ(project_trust(w_.workspace, w_.options.trust_dir)->state, TrustState::kChanged);
  EXPECT_TRUE(servers().empty());
  pin();
  EXPECT_EQ(servers(), (std::vector<std::string>{"proj@project", "more@project"}));
}

TEST_F(McpLayersTest, TheFirstLayersDeclarationWinsAndTwoFilesOfALayerMayNotShareAName) {
  write_file(w_.options.user_dir + "/a.toml",
             std::string(kHead) + "name = \"files\"\ncommand = [\"user-fs\"]\n");
  write_file(mcp_json_, R"({"mcpServers": {"files": {"command": "repo-fs"}}})");
  pin();
  auto p = w_.load();
  ASSERT_EQ(p->mcp_servers().size(), 1u);
  EXPECT_EQ(p->mcp_servers()[0].argv, Strings{"user-fs"});
  EXPECT_THAT(::testing::PrintToString(p->notices()),
              HasSubstr("MCP server \\\"files\\\" ignored: the user layer's declaration at"));
  write_file(w_.options.user_dir + "/b.toml",
             std::string(kHead) + "name = \"files\"\ncommand = [\"other\"]\n");
  auto again = Policy::load(w_.options);
  ASSERT_FALSE(again);
  EXPECT_THAT(again.error().message(),
              HasSubstr("b.toml:2:1: mcp.server.name: \"files\" is already declared in the user layer at"));
}

TEST_F(McpLayersTest, ManagedServersOnlyKeepsTheSystemLayersAlone) {
  if (!w_.set_system_layer(std::string("schema = 1\n[constraints]\nmanaged_mcp_servers_only = true\n") +
                           "[[mcp.server]]\nname = \"org\"\ncommand = [\"/opt/org\"]\n"))
    GTEST_SKIP() << "a system layer must be owned by root; this test runs as uid " << ::geteuid();
  write_file(w_.options.user_dir + "/u.toml",
             std::string(kHead) + "name = \"mine\"\ncommand = [\"x\"]\n[[mcp.server]]\n"
                                  "name = \"org\"\ncommand = [\"y\"]\n");
  EXPECT_EQ(servers(), std::vector<std::string>{"org@system"});
  auto p = w_.load();
  EXPECT_THAT(::testing::PrintToString(p->notices()),
              HasSubstr("\\\"mine\\\" ignored: the organisation allows only the system layer's"));
}

TEST_F(McpLayersTest, ASystemServerIsNeverReplaced) {
  if (!w_.set_system_layer(std::string(kHead) + "name = \"org\"\ncommand = [\"/opt/org\"]\n"))
    GTEST_SKIP() << "a system layer must be owned by root; this test runs as uid " << ::geteuid();
  write_file(w_.options.user_dir + "/u.toml",
             std::string(kHead) + "name = \"org\"\ncommand = [\"mine\"]\n");
  auto p = w_.load();
  ASSERT_EQ(p->mcp_servers().size(), 1u);
  EXPECT_EQ(p->mcp_servers()[0].argv, Strings{"/opt/org"});
  EXPECT_EQ(p->mcp_servers()[0].layer, "system");
}

// [[tool]] args conditions.
class ToolArgsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    write_file(w_.options.user_dir + "/u.toml", R"(schema = 1
[[tool]]
id = "fs.read-ws"
decision = "allow"
tool = "mcp:files:read_*"
args = { path = "/ws/**" }
tests.match = ["mcp:files:read_file {\"path\": \"/ws/a.txt\"}"]
tests.not_match = ["mcp:files:read_file {\"path\": \"/ws/../etc/passwd\"}"]
[[tool]]
id = "fs.no-secrets"
decision = "deny"
tool = "mcp:files:*"
args = { path = ["/etc/**", "*.pem"] }
[[tool]]
id = "db.ro"
decision = "allow"
tool = "mcp:db:query"
args = { "/options/mode" = "read*", "/options/limit" = "1?" }
)");
    p_ = w_.load();
  }
  Decision decide(const std::string& tool, const char* args) {
    return p_->decide_tool(tool, json::parse(args), {});
  }
  PolicyWorld w_;
  std::unique_ptr<Policy> p_;
};

TEST_F(ToolArgsTest, PathGlobsMatchComponentsAndAnAllowNeverTakesDotDot) {
  EXPECT_EQ(decide("mcp:files:read_file", R"({"path": "/ws/src/a.txt"})").deciding.id, "fs.read-ws");
  EXPECT_EQ(decide("mcp:files:read_file", R"({"path": "/ws/src/a.txt"})").verdict, Verdict::kAllow);
  // ".." leaves the allow; the deny sees the lexical path /etc/passwd.
  Decision d = decide("mcp:files:read_file", R"({"path": "/ws/../etc/passwd"})");
  EXPECT_EQ(d.verdict, Verdict::kDeny);
  EXPECT_EQ(d.deciding.id, "fs.no-secrets");
  EXPECT_EQ(decide("mcp:files:read_file", R"({"path": "/ws/k.pem"})").verdict, Verdict::kDeny);
  // Absent argument: no condition holds; the default decides.
  EXPECT_EQ(decide("mcp:files:read_file", R"({})").deciding.id, "defaults.tool");
}

TEST_F(ToolArgsTest, StructuredValuesAllowOnlyByDoubleStarAndDenyByAnyValueInside) {
  Decision d = decide("mcp:files:read_file", R"({"path": ["/ws/a", "/etc/shadow"]})");
  EXPECT_EQ(d.verdict, Verdict::kDeny);
  EXPECT_EQ(d.deciding.id, "fs.no-secrets");
  EXPECT_NE(decide("mcp:files:read_file", R"({"path": ["/ws/a"]})").verdict, Verdict::kAllow);
}

TEST_F(ToolArgsTest, JsonPointersAndNumbersAsTheirText) {
  EXPECT_EQ(decide("mcp:db:query", R"({"options": {"mode": "readonly", "limit": 10}})").verdict,
            Verdict::kAllow);
  EXPECT_NE(decide("mcp:db:query", R"({"options": {"mode": "readonly", "limit": 100}})").verdict,
            Verdict::kAllow);
  EXPECT_NE(decide("mcp:db:query", R"({"options": {"mode": "write", "limit": 10}})").verdict,
            Verdict::kAllow);
  EXPECT_NE(decide("mcp:db:query", R"({"options": "readonly"})").verdict, Verdict::kAllow);
}

TEST(ToolArgsLoad, BadKeysAndTestInputsAreRefusedAtTheirPlace) {
  const std::string head = "schema = 1\n[[tool]]\nid = \"t\"\ndecision = \"deny\"\ntool = \"x\"\n";
  EXPECT_THAT(error_of(head + "args = { \"a/b\" = \"*\" }\n"),
              HasSubstr("t.toml:6:10: tool[0].args.a/b: expected an argument name without \"/\""));
  EXPECT_THAT(error_of(head + "args = { \"/a~2\" = \"*\" }\n"),
              HasSubstr("tool[0].args./a~2: not a JSON pointer"));
  EXPECT_THAT(error_of(head + "args = { a = 1 }\n"), HasSubstr("t.toml:6:14: tool[0].args.a"));
  EXPECT_THAT(error_of(head + "tests.match = [\"x {nope\"]\n"),
              HasSubstr("t.toml:6:15: tool[0].tests.match: \"x {nope\": expected a tool name"));
}

TEST(ToolHints, AnnotationsChooseOnlyTheDefaultAndNeverLoosenADenyOrARule) {
  EXPECT_TRUE(tool_hints(json{{"readOnlyHint", true}}).read_only);
  EXPECT_TRUE(tool_hints(json::object()).destructive);  // the specification's default
  EXPECT_FALSE(tool_hints(json{{"destructiveHint", false}}).destructive);
  EXPECT_FALSE(tool_hints(json{{"readOnlyHint", true}, {"destructiveHint", true}}).destructive);
  PolicyWorld w;
  auto p = w.load();
  const ToolHints ro{true, false}, destructive{false, true};
  EXPECT_EQ(p->decide_tool("mcp:a:b", json::object(), {}).verdict, Verdict::kAsk);
  Decision read = p->decide_tool("mcp:a:b", json::object(), ro);
  EXPECT_EQ(read.verdict, Verdict::kAllow);  // defaults.read
  EXPECT_EQ(read.deciding.id, "defaults.read");
  write_file(w.options.user_dir + "/u.toml",
             "schema = 1\ndefaults = { tool = \"allow\" }\n[[tool]]\nid = \"u.ask\"\n"
             "decision = \"ask\"\ntool = \"mcp:a:*\"\n");
  p = w.load();
  EXPECT_EQ(p->decide_tool("mcp:x:y", json::object(), destructive).verdict, Verdict::kAsk);
  EXPECT_EQ(p->decide_tool("mcp:x:y", json::object(), {}).verdict, Verdict::kAllow);
  EXPECT_EQ(p->decide_tool("mcp:a:b", json::object(), ro).deciding.id, "u.ask");  // a rule decides
  write_file(w.options.user_dir + "/u.toml", "schema = 1\ndefaults = { tool = \"deny\" }\n");
  EXPECT_EQ(w.load()->decide_tool("mcp:a:b", json::object(), ro).verdict, Verdict::kDeny);
}

}  // namespace
}  // namespace moat::policy
