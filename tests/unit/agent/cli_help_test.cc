// tests/unit/agent/cli_help_test.cc: what each command's --help promises (issue 16, item 7):
// only the exit codes that command can return, and one spelling of the policy directories.
#include <gtest/gtest.h>
#include <unistd.h>

#include <set>
#include <string>
#include <vector>

#include "tests/unit/agent/moat_cli.h"

namespace moat::testing {
namespace {

class CliHelp : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* bin = std::getenv("MOAT_BIN");
    if (bin == nullptr || ::access(bin, X_OK) != 0) GTEST_SKIP() << "MOAT_BIN is not built";
  }
};

// The codes the "Exit codes: ..." footer of `moat <command> --help` names.
std::set<int> listed_codes(const std::string& help) {
  std::set<int> codes;
  const size_t at = help.find("Exit codes: ");
  if (at == std::string::npos) return codes;
  const std::string line = help.substr(at, help.find('\n', at) - at);
  for (int code = 0; code <= 5; ++code)
    if (line.find(" " + std::to_string(code) + " ") != std::string::npos) codes.insert(code);
  return codes;
}

TEST_F(CliHelp, EveryCommandsHelpListsOnlyTheExitCodesItCanReturn) {
  struct Command {
    const char* words;
    std::set<int> codes;
  };
  const std::vector<Command> commands = {
      {"version", {0, 2}},           {"run", {0, 1, 2, 3, 4, 5}},
      {"sandbox", {0, 2}},           {"sandbox explain-filter", {0, 2}},
      {"doctor", {0, 2, 3}},         {"policy", {0, 2}},
      {"policy lint", {0, 1, 2}},    {"policy test", {0, 1, 2}},
      {"policy list", {0, 2}},       {"policy explain", {0, 1, 2, 3}},
      {"policy trust", {0, 2}},      {"sessions", {0, 2}},
      {"sessions list", {0, 2}},     {"sessions show", {0, 2}},
      {"sessions tree", {0, 2}},     {"sessions label", {0, 2}},
      {"sessions export", {0, 2}},   {"audit", {0, 2}},
      {"audit verify", {0, 1, 2}},   {"audit show", {0, 1, 2}},
      {"audit export", {0, 1, 2}},   {"provider", {0, 2}},
      {"provider parse", {0, 2, 4}}, {"prompt", {0, 2}},
      {"prompt show", {0, 2}},       {"batch", {0, 1, 2, 5}},
      {"batch merge", {0, 1, 2, 5}},
  };
  for (const Command& c : commands) {
    const CliRun r = moat(std::string(c.words) + " --help");
    EXPECT_EQ(r.rc, 0) << c.words << "\n" << r.out;
    EXPECT_EQ(listed_codes(r.out), c.codes) << "moat " << c.words << " --help:\n" << r.out;
  }
  // `sandbox exec` has the statuses of env(1) and timeout(1) instead, and says so.
  const CliRun exec = moat("sandbox exec --help");
  EXPECT_EQ(listed_codes(exec.out), std::set<int>{}) << exec.out;
  EXPECT_NE(exec.out.find("125 when moat failed"), std::string::npos) << exec.out;
}

TEST_F(CliHelp, ThePolicyDirectoriesHaveOneSpellingInEveryCommandAndTheOldOnesStillWork) {
  for (const char* cmd :
       {"run", "sandbox exec", "policy lint", "policy test", "policy list", "policy explain"}) {
    const CliRun r = moat(std::string(cmd) + " --help");
    EXPECT_NE(r.out.find("--system-policy-dir"), std::string::npos) << cmd << "\n" << r.out;
    EXPECT_NE(r.out.find("--user-policy-dir"), std::string::npos) << cmd << "\n" << r.out;
    for (const char* old : {"--policy-dir", "--system-dir", "--user-dir"})
      EXPECT_EQ(r.out.find(std::string(old) + " "), std::string::npos)
          << cmd << " shows the hidden alias " << old << "\n"
          << r.out;
  }
  // An empty directory for both layers: the builtin layer alone, whichever spelling.
  char dir[] = "/tmp/moat-cli-help-XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  const std::string d(dir);
  for (const std::string& flags :
       {"--system-policy-dir " + d + " --user-policy-dir " + d,
        "--policy-dir " + d + " --user-dir " + d, "--system-dir " + d + " --user-dir " + d}) {
    const CliRun r = moat("policy list " + flags);
    EXPECT_EQ(r.rc, 0) << flags << "\n" << r.out;
    EXPECT_NE(r.out.find("layer  builtin"), std::string::npos) << flags << "\n" << r.out;
  }
  ::rmdir(dir);
}

}  // namespace
}  // namespace moat::testing
