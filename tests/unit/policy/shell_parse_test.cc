// tests/unit/policy/shell_parse_test.cc: the POSIX shell parser, construct by construct.
#include "policy/shell_parse.h"

#include <gtest/gtest.h>

#include <random>

namespace moat::policy {
namespace {

std::vector<std::string> argv_of(const SimpleCommand& c) {
  std::vector<std::string> out;
  for (const auto& w : c.words) out.push_back(w.literal());
  return out;
}

using V = std::vector<std::string>;

TEST(ShellParse, ListsAndPipelinesYieldEverySimpleCommand) {
  auto p = parse_shell("a 1; b 2 && c || d | e & f\ng");
  ASSERT_TRUE(p.problems.empty());
  ASSERT_EQ(p.commands.size(), 7u);
  EXPECT_EQ(argv_of(p.commands[0]), (V{"a", "1"}));
  EXPECT_EQ(argv_of(p.commands[6]), (V{"g"}));
}

TEST(ShellParse, QuotingIsRemovedAndEscapesApply) {
  auto p = parse_shell("'r''m' -rf; r\\m x; \"rm\" y; $'\\x72m' z");
  ASSERT_TRUE(p.problems.empty());
  ASSERT_EQ(p.commands.size(), 4u);
  for (const auto& c : p.commands) {
    EXPECT_TRUE(c.words[0].is_literal());
    EXPECT_EQ(c.words[0].literal(), "rm");
  }
}

// Substitutions run before the command that uses them, and are listed first.
TEST(ShellParse, SubstitutionsAreParsedOneLevelDeeper) {
  auto p = parse_shell("echo $(rm -rf ~) `curl x` <(git log) \"$(id)\"");
  ASSERT_TRUE(p.problems.empty()) << p.problems[0];
  ASSERT_EQ(p.commands.size(), 5u);
  std::vector<std::string> inner;
  std::vector<std::string> origins;
  for (std::size_t i = 0; i + 1 < p.commands.size(); ++i) {
    EXPECT_EQ(p.commands[i].depth, 1);
    inner.push_back(p.commands[i].words[0].literal());
    origins.push_back(p.commands[i].origin);
  }
  EXPECT_EQ(inner, (V{"rm", "curl", "git", "id"}));
  EXPECT_EQ(origins, (V{"$()", "``", "<()", "$()"}));
  const auto& echo = p.commands.back();
  EXPECT_EQ(echo.depth, 0);
  EXPECT_EQ(echo.words[0].literal(), "echo");
  EXPECT_FALSE(echo.words[1].is_literal());
}

TEST(ShellParse, NestedSubstitutionsKeepTheirDepth) {
  auto p = parse_shell("a $(b $(c $(d)))");
  ASSERT_EQ(p.commands.size(), 4u);
  EXPECT_EQ(p.commands[0].words[0].literal(), "d");
  EXPECT_EQ(p.commands[0].depth, 3);
  EXPECT_EQ(p.commands[3].words[0].literal(), "a");
  EXPECT_EQ(p.commands[3].depth, 0);
}

TEST(ShellParse, AssignmentsAreSplitFromArgv) {
  auto p = parse_shell("X=1 Y=$(id) rm -rf / Z=3");
  ASSERT_EQ(p.commands.size(), 2u);  // rm, and id inside the substitution
  const auto& rm = p.commands[1];
  EXPECT_EQ(p.commands[0].words[0].literal(), "id");
  ASSERT_EQ(rm.assignments.size(), 2u);
  EXPECT_EQ(rm.assignments[0].first, "X");
  EXPECT_EQ(argv_of(rm), (V{"rm", "-rf", "/", "Z=3"}));
}

TEST(ShellParse, RedirectionsAreRecordedWithTheirTargets) {
  auto p = parse_shell("echo x >> ~/.bashrc 2>/dev/null >&2 <in &>all");
  ASSERT_EQ(p.commands.size(), 1u);
  const auto& r = p.commands[0].redirects;
  ASSERT_EQ(r.size(), 5u);
  EXPECT_EQ(r[0].op, ">>");
  EXPECT_TRUE(r[0].writes());
  EXPECT_EQ(r[1].fd, 2);
  EXPECT_EQ(r[1].target.literal(), "/dev/null");
  EXPECT_FALSE(r[2].writes());  // >&2 duplicates a descriptor
  EXPECT_FALSE(r[3].writes());
  EXPECT_TRUE(r[4].writes());
  EXPECT_EQ(argv_of(p.commands[0]), (V{"echo", "x"}));
}

TEST(ShellParse, HereDocBodiesAreReadAndTheirSubstitutionsParsed) {
  auto quoted = parse_shell("cat <<'EOF'\n$(rm -rf /)\nEOF\necho done");
  ASSERT_TRUE(quoted.problems.empty());
  ASSERT_EQ(quoted.commands.size(), 2u);  // the quoted body is data
  auto open = parse_shell("cat <<EOF\nhello $(rm -rf /)\nEOF\n");
  ASSERT_EQ(open.commands.size(), 2u);
  EXPECT_EQ(open.commands[0].words[0].literal(), "rm");
  EXPECT_EQ(open.commands[0].origin, "here-doc");
  EXPECT_EQ(open.commands[1].words[0].literal(), "cat");
  auto tabs = parse_shell("cat <<-EOF\n\tx\n\tEOF\nls");
  EXPECT_EQ(tabs.commands.size(), 2u);
}

TEST(ShellParse, CompoundCommandsAreWalked) {
  auto p = parse_shell(
      "if test -f x; then rm x; elif a; then b; else c; fi; while read l; do echo $l; done < f; "
      "for f in *.c $(ls); do gcc $f; done; case $x in a|b) d1;; *) d2;; esac; { e; }; (f)");
  ASSERT_TRUE(p.problems.empty()) << p.problems[0];
  std::vector<std::string> names;
  for (const auto& c : p.commands)
    if (!c.words.empty()) names.push_back(c.words[0].literal());
  EXPECT_EQ(names,
            (V{"test", "rm", "a", "b", "c", "read", "echo", "ls", "gcc", "d1", "d2", "e", "f"}));
}

TEST(ShellParse, FunctionDefinitionsAreProblems) {
  EXPECT_FALSE(parse_shell("f() { rm -rf /; }; f").problems.empty());
  EXPECT_FALSE(parse_shell("function f { ls; }").problems.empty());
}

TEST(ShellParse, SyntaxErrorsAreProblemsNotCrashes) {
  for (const char* bad : {"echo 'unterminated", "echo \"x", "(ls", "ls )", "echo $(ls",
                          "if x; then", "| ls", "ls &&", "echo ${x", "a >", "cat <<", "`ls"}) {
    SCOPED_TRACE(bad);
    EXPECT_FALSE(parse_shell(bad).problems.empty());
  }
}

TEST(ShellParse, ControlCharactersAndLimitsAreProblems) {
  EXPECT_FALSE(parse_shell("ls\r -la").problems.empty());
  EXPECT_FALSE(parse_shell(std::string("ls\0x", 4)).problems.empty());
  EXPECT_FALSE(parse_shell(std::string(kMaxShellBytes + 1, 'a')).problems.empty());
  std::string deep;
  for (int i = 0; i < 40; ++i) deep += "$(";
  deep += "x";
  for (int i = 0; i < 40; ++i) deep += ")";
  EXPECT_FALSE(parse_shell("echo " + deep).problems.empty());
}

TEST(ShellParse, ExpansionsAreMarkedUnknown) {
  auto p = parse_shell("$CMD -rf ${HOME} ~/x *.c {a,b} a{1..3} '$q' \"$v\"");
  ASSERT_EQ(p.commands.size(), 1u);
  const auto& w = p.commands[0].words;
  EXPECT_FALSE(w[0].is_literal());
  EXPECT_TRUE(w[0].may_split());
  EXPECT_FALSE(w[2].is_literal());
  EXPECT_FALSE(w[3].is_literal());  // tilde
  EXPECT_FALSE(w[4].is_literal());  // glob
  EXPECT_FALSE(w[5].is_literal());  // brace expansion
  EXPECT_FALSE(w[6].is_literal());
  EXPECT_TRUE(w[7].is_literal());  // single quotes keep $ literal
  EXPECT_FALSE(w[8].is_literal());
  EXPECT_FALSE(w[8].may_split());  // quoted: one word
  auto find = parse_shell("find . -exec rm {} \\;");
  EXPECT_TRUE(find.commands[0].words[4].is_literal());  // {} is not a brace expansion
}

TEST(ShellParse, LineContinuationsAndCommentsAreHandled) {
  auto p = parse_shell("ls \\\n -la # rm -rf /\necho 'a # b'");
  ASSERT_EQ(p.commands.size(), 2u);
  EXPECT_EQ(argv_of(p.commands[0]), (V{"ls", "-la"}));
  EXPECT_EQ(argv_of(p.commands[1]), (V{"echo", "a # b"}));
}

// Random lines over the shell's special characters never crash the parser (the libFuzzer
// target in tests/fuzz goes further).
TEST(ShellParse, RandomLinesNeverCrash) {
  std::mt19937 rng(7);
  const std::string alphabet = "ab -|&;<>()$`'\"\\{}[]*?~#=\n\t!0123456789cdEOF";
  for (int round = 0; round < 20000; ++round) {
    std::string line;
    std::size_t len = rng() % 64;
    for (std::size_t i = 0; i < len; ++i) line += alphabet[rng() % alphabet.size()];
    auto p = parse_shell(line);
    for (const auto& c : p.commands) EXPECT_LE(c.depth, kMaxShellDepth);
  }
}

}  // namespace
}  // namespace moat::policy
