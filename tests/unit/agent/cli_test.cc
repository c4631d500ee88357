// tests/unit/agent/cli_test.cc: agent/cli.h: every exit code has one text, and the README's
// table says the same words; a command built for its first word alone is the whole tree's.
#include "agent/cli.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <iterator>
#include <set>
#include <sstream>
#include <string>
#include <vector>

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

std::vector<const CLI::App*> subcommands(const CLI::App& app) {
  return app.get_subcommands(std::function<bool(const CLI::App*)>{});  // {}: every one
}

// CLI11 keeps an option's excludes in a set ordered by address, so "Excludes: --a --b" lists
// them in an order that changes with the heap: each such list is sorted.
std::string sorted_excludes(const std::string& help) {
  std::istringstream in(help);
  std::string out;
  for (std::string line; std::getline(in, line);) {
    if (const std::size_t at = line.find(" Excludes: "); at != std::string::npos) {
      std::istringstream words(line.substr(at + 11));
      std::vector<std::string> names{std::istream_iterator<std::string>(words), {}};
      std::sort(names.begin(), names.end());
      line.resize(at + 10);
      for (const std::string& n : names) line += " " + n;
    }
    out += line + "\n";
  }
  return out;
}

// A command's help and its subcommands', all the way down: what its options are.
std::string help_tree(const CLI::App& app) {
  std::string out = sorted_excludes(app.help());
  for (const CLI::App* sub : subcommands(app)) out += help_tree(*sub);
  return out;
}

std::vector<std::string> top_words(const CLI::App& app) {
  std::vector<std::string> words;
  for (const CLI::App* sub : subcommands(app)) words.push_back(sub->get_name());
  return words;
}

// main.cc builds only the group its first word names (a third of `moat sandbox exec`'s start):
// each command so built must be the command of the whole tree, options and help alike.
TEST(Cli, ACommandBuiltForItsFirstWordAloneIsTheWholeTreesCommand) {
  CLI::App all;
  int code = 0;
  add_commands(all, code, "--help");
  const std::vector<std::string> words = top_words(all);
  ASSERT_GE(words.size(), 11u);  // run, sandbox, doctor, ..., completion
  for (const std::string& word : words) {
    if (word == "completion") continue;
    CLI::App alone;
    add_commands(alone, code, word);
    EXPECT_LE(top_words(alone).size(), 2u) << word << " built other groups too";
    const CLI::App* same = nullptr;
    for (const CLI::App* sub : subcommands(alone))
      if (sub->get_name() == word) same = sub;
    ASSERT_NE(same, nullptr) << word << " is not registered when it is the first word";
    EXPECT_EQ(help_tree(*same), help_tree(*all.get_subcommand(word))) << word;
  }
}

TEST(Cli, AFirstWordNamingNoGroupBuildsEveryCommand) {
  int code = 0;
  CLI::App all;
  add_commands(all, code, "");
  for (const char* word : {"completion", "--version", "sandbx", "-h"}) {
    CLI::App app;
    add_commands(app, code, word);
    EXPECT_EQ(top_words(app), top_words(all)) << word;
  }
  EXPECT_EQ(top_words(all).back(), "completion");  // last: its script lists the others
}

}  // namespace
}  // namespace moat::agent
