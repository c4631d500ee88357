// tests/unit/agent/cli_policy_test.cc: `moat policy explain|lint|list` and `moat doctor` as a
// person or a CI step runs them (the built binary, MOAT_BIN), issue 27 items 7 and 20: explain's
// exit status is its verdict and it explains a host:port; lint's --help says what its codes mean;
// doctor says each fact once.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "tests/unit/agent/moat_cli.h"

namespace moat::testing {
namespace {

class CliPolicy : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* bin = std::getenv("MOAT_BIN");
    if (bin == nullptr || ::access(bin, X_OK) != 0) GTEST_SKIP() << "MOAT_BIN is not built";
    char tmpl[] = "/tmp/moat-cli-policy-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    std::filesystem::create_directories(dir_ + "/user.d");
    std::filesystem::create_directories(dir_ + "/ws");
  }
  void TearDown() override {
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
  }

  void user_layer(const std::string& text) { std::ofstream(dir_ + "/user.d/10.toml") << text; }

  // `moat policy <sub>` over the built-in layer and this test's user layer only.
  CliRun policy(const std::string& sub, const std::string& args) {
    return moat("policy " + sub + " --system-policy-dir " + dir_ + "/none --user-policy-dir " +
                dir_ + "/user.d --trust-dir " + dir_ + "/trust --workspace " + dir_ + "/ws " +
                args);
  }

  std::string dir_;
};

TEST_F(CliPolicy, ExplainExitsWithItsVerdictSoACiStepCanGateOnIt) {
  EXPECT_EQ(policy("explain", "-- ls").rc, 0);
  const CliRun ask = policy("explain", "-- rm -rf build");
  EXPECT_EQ(ask.rc, 3) << ask.out;
  const CliRun headless = policy("explain", "--headless -- rm -rf build");
  EXPECT_EQ(headless.rc, 1) << headless.out;
  const CliRun deny = policy("explain", "--path /etc/shadow");
  EXPECT_EQ(deny.rc, 1) << deny.out;
  EXPECT_NE(deny.out.find("DENY"), std::string::npos) << deny.out;
  EXPECT_EQ(policy("explain", "").rc, 2);
  const CliRun help = moat("policy explain --help");
  EXPECT_NE(help.out.find("Exit codes: 0 allow, 1 deny, 2 usage or configuration error, 3 ask"),
            std::string::npos)
      << help.out;
}

TEST_F(CliPolicy, ExplainExplainsAHostAndPort) {
  user_layer(
      "schema = 1\n[[network]]\nid = \"user.pypi\"\ndecision = \"allow\"\n"
      "domains = [\"pypi.org\"]\nports = [443]\n");
  const CliRun allowed = policy("explain", "--network pypi.org:443");
  EXPECT_EQ(allowed.rc, 0) << allowed.out;
  EXPECT_NE(allowed.out.find("ALLOW"), std::string::npos) << allowed.out;
  EXPECT_NE(allowed.out.find("user.pypi"), std::string::npos) << allowed.out;
  const CliRun other_port = policy("explain", "--network pypi.org:80");
  EXPECT_EQ(other_port.rc, 1) << other_port.out;
  const CliRun literal = policy("explain", "--network '[::1]:8080'");
  EXPECT_EQ(literal.rc, 1) << literal.out;
  EXPECT_NE(literal.out.find("builtin.network-ip-literal"), std::string::npos) << literal.out;
  EXPECT_EQ(policy("explain", "--json --network pypi.org:443").rc, 0);
  // Bad input: a usage error naming the option, the value and what it takes.
  for (const char* bad : {"pypi.org", "pypi.org:0", "pypi.org:65536", "::1:80", "'a b:80'",
                          "pypi.org:https"}) {
    const CliRun r = policy("explain", std::string("--network ") + bad);
    EXPECT_EQ(r.rc, 2) << bad << "\n" << r.out;
    EXPECT_NE(r.out.find("--network"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("HOST:PORT"), std::string::npos) << r.out;
  }
}

// Issue 29: an MCP tool call with its arguments, named as the model names it or as rules do.
constexpr const char* kToolRules = R"(schema = 1
[[tool]]
id = "user.fs-read"
decision = "allow"
tool = "mcp:fs:read_*"
args = { path = "/ws/**" }
tests.match = ["mcp:fs:read_file {\"path\": \"/ws/a\"}"]
tests.not_match = ["mcp:fs:read_file {\"path\": \"/etc/passwd\"}"]
[[tool]]
id = "user.fs-etc"
decision = "deny"
tool = "mcp:fs:*"
args = { path = "/etc/**" }
)";

TEST_F(CliPolicy, ExplainDecidesAnMcpToolCallWithItsArguments) {
  user_layer(kToolRules);
  const CliRun deny =
      policy("explain", "--tool mcp__fs__read_file --args '{\"path\": \"/etc/passwd\"}'");
  EXPECT_EQ(deny.rc, 1) << deny.out;
  EXPECT_NE(deny.out.find("deciding=user.fs-etc  user  " + dir_ + "/user.d/10.toml:9"),
            std::string::npos)
      << deny.out;
  EXPECT_NE(deny.out.find("mcp:fs:read_file {"), std::string::npos) << deny.out;
  const CliRun allow = policy("explain", "--tool mcp:fs:read_file --args '{\"path\": \"/ws/a\"}'");
  EXPECT_EQ(allow.rc, 0) << allow.out;
  EXPECT_NE(allow.out.find("deciding=user.fs-read"), std::string::npos) << allow.out;
  const CliRun json = policy("explain", "--json --tool mcp:fs:read_file --args '{\"path\": \"/ws/a\"}'");
  EXPECT_NE(json.out.find("\"user.fs-read\""), std::string::npos) << json.out;
  // No arguments: no args condition holds, the default (ask) decides.
  EXPECT_EQ(policy("explain", "--tool mcp__fs__read_file").rc, 3);
  for (const char* bad : {"--tool mcp__fs__read_file --args '[1]'",
                          "--tool mcp__fs__read_file --args '{nope'", "--args '{}' -- ls"}) {
    const CliRun r = policy("explain", bad);
    EXPECT_EQ(r.rc, 2) << bad << "\n" << r.out;
    EXPECT_NE(r.out.find("--args"), std::string::npos) << r.out;
  }
  EXPECT_EQ(policy("explain", "--tool mcp__bad").rc, 2);
  EXPECT_NE(policy("explain", "--tool mcp__bad").out.find("mcp__SERVER__TOOL"), std::string::npos);
}

TEST_F(CliPolicy, TestRunsToolRulesTestsWithTheirArguments) {
  user_layer(kToolRules);
  const CliRun ok = policy("test", "");
  EXPECT_EQ(ok.out.find("FAIL  user."), std::string::npos) << ok.out;
  EXPECT_NE(ok.out.find(" passed"), std::string::npos) << ok.out;
  std::string wrong = kToolRules;
  wrong.replace(wrong.find("/ws/a"), 5, "/ws/../x");
  user_layer(wrong);
  const CliRun failed = policy("test", "");
  EXPECT_NE(failed.rc, 0) << failed.out;
  EXPECT_NE(failed.out.find("FAIL  user.fs-read"), std::string::npos) << failed.out;
}

TEST_F(CliPolicy, LintHelpSaysWhatItsExitCodesMeanAndLintReturnsThem) {
  const CliRun help = moat("policy lint --help");
  EXPECT_NE(help.out.find("Exit codes: 0 no error and no warning, 1 warnings only, 2 an error"),
            std::string::npos)
      << help.out;
  EXPECT_EQ(policy("lint", "").rc, 0);
  user_layer(
      "schema = 1\n[[command]]\nid = \"user.all\"\ndecision = \"deny\"\nprogram = \"git\"\n"
      "[[command]]\nid = \"user.status\"\ndecision = \"ask\"\nprogram = \"git\"\n");
  const CliRun warned = policy("lint", "");
  EXPECT_EQ(warned.rc, 1) << warned.out;
  user_layer("schema = 1\n[[command]]\nid = \"user.typo\"\ndecison = \"deny\"\n");
  const CliRun broken = policy("lint", "");
  EXPECT_EQ(broken.rc, 2) << broken.out;
}

TEST_F(CliPolicy, ListShowsEachResourceWithTheLayerThatSetIt) {
  user_layer("schema = 1\nresources = { wall_time = \"1h\", pids = 4096 }\n");
  const CliRun r = policy("list", "");
  EXPECT_EQ(r.rc, 0) << r.out;
  auto line_of = [&](const std::string& key) {
    const std::size_t at = r.out.find("resource " + key + " ");
    return at == std::string::npos ? std::string() : r.out.substr(at, r.out.find('\n', at) - at);
  };
  const std::string wall = line_of("wall_time");
  EXPECT_NE(wall.find(" 1h "), std::string::npos) << r.out;
  EXPECT_NE(wall.find(" user "), std::string::npos) << wall;
  EXPECT_NE(wall.find(dir_ + "/user.d/10.toml"), std::string::npos) << wall;
  EXPECT_NE(line_of("pids").find(" 4096 "), std::string::npos) << r.out;
  const std::string cpu = line_of("cpu_time");
  EXPECT_NE(cpu.find(" 10m "), std::string::npos) << r.out;
  EXPECT_NE(cpu.find("builtin:default.toml"), std::string::npos) << cpu;
}

TEST(CliDoctor, SaysEachLayerAndItsLandlockAbiOnce) {
  const char* bin = std::getenv("MOAT_BIN");
  if (bin == nullptr || ::access(bin, X_OK) != 0) GTEST_SKIP() << "MOAT_BIN is not built";
  const CliRun r = moat("doctor");
  std::map<std::string, int> lines;
  std::string landlock;
  for (std::size_t at = 0; at < r.out.size();) {
    const std::size_t end = r.out.find('\n', at);
    const std::string line = r.out.substr(at, end - at);
    at = end == std::string::npos ? r.out.size() : end + 1;
    const std::string name = line.substr(0, line.find(' '));
    ++lines[name];
    if (name == "landlock") landlock = line;
  }
  for (const auto& [name, n] : lines) EXPECT_EQ(n, 1) << name << " printed " << n << " times";
  ASSERT_FALSE(landlock.empty()) << r.out;
  const std::size_t abi = landlock.find("ABI ");
  if (abi != std::string::npos) {
    EXPECT_EQ(landlock.find("ABI ", abi + 1), std::string::npos) << landlock;
  }
}

}  // namespace
}  // namespace moat::testing
