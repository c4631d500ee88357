// tests/unit/agent/cli_test.cc: agent/cli.h: every exit code has one text, and the README's
// table says the same words.
#include "agent/cli.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>

namespace moat::agent {
namespace {

TEST(Cli, EveryExitCodeHasExactlyOneMeaning) {
  std::set<int> codes;
  for (const auto& e : kExitCodeMeanings) {
    EXPECT_TRUE(codes.insert(e.code).second) << e.code;
    EXPECT_STRNE(e.meaning, "") << e.code;
  }
  EXPECT_EQ(codes, (std::set<int>{kExitDone, kExitTaskFailed, kExitUsage, kExitSandbox,
                                  kExitProvider, kExitStore}));
}

TEST(Cli, TheReadmesExitCodeTableSaysTheSameWords) {
  std::ifstream in(std::string(MOAT_SOURCE_ROOT) + "/README.md");
  std::stringstream readme;
  readme << in.rdbuf();
  for (const auto& e : kExitCodeMeanings) {
    const std::string row = "| " + std::to_string(e.code) + " | " + e.meaning;
    EXPECT_NE(readme.str().find(row), std::string::npos) << "README.md has no row " << row;
  }
}

TEST(Cli, TheHelpTextListsEveryCodeInOrder) {
  EXPECT_EQ(exit_codes_text("", "=", ";"),
            "0=done;1=the task failed or a gate stopped it;2=usage or configuration error;"
            "3=the sandbox could not be set up;4=the model provider failed;"
            "5=the session could not be saved (the session store failed);");
}

}  // namespace
}  // namespace moat::agent
