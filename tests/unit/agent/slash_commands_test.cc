// tests/unit/agent/slash_commands_test.cc: the one table of typed commands
// (agent/slash_commands.h): every word has one row, the help names each, and a line is read
// against it as the terminal reads it.
#include "agent/slash_commands.h"

#include <gtest/gtest.h>

#include <set>

namespace moat::agent {
namespace {

TEST(SlashCommands, EveryWordHasOneRowAndTheHelpNamesIt) {
  std::set<std::string_view> words;
  const std::string help = slash_help();
  for (const SlashCommand& c : kSlashCommands) {
    EXPECT_TRUE(words.insert(c.word).second) << "/" << c.word << " has two rows";
    EXPECT_NE(help.find("/" + std::string(c.word)), std::string::npos) << c.word << "\n" << help;
    EXPECT_EQ(c.owner == SlashOwner::kLoop, !c.rpc_type.empty()) << c.word;
  }
}

TEST(SlashCommands, ALineIsACommandOnlyAsItsRowTakesIt) {
  auto row = [](const char* line) -> std::string {
    const auto s = read_slash(line);
    if (!s) return "no command";
    return s->command ? std::string(s->command->word) + "|" + s->rest : "unknown " + s->word;
  };
  EXPECT_EQ(row(" /diff \r"), "diff|");
  EXPECT_EQ(row("/compact keep the numbers"), "compact|keep the numbers");
  EXPECT_EQ(row("/cost now"), "unknown cost") << "a view's command stands alone";
  EXPECT_EQ(row("/exit now"), "unknown exit");
  EXPECT_EQ(row("/bogus"), "unknown bogus");
  EXPECT_EQ(row("/usr/bin is wrong"), "no command");
  EXPECT_EQ(row("fix the tests"), "no command");
}

}  // namespace
}  // namespace moat::agent
