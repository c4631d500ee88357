// tests/unit/policy/match_test.cc: option matching (policy/match.cc). A long option a rule names
// also matches the abbreviations git and getopt_long programs accept (issue 27 item 23), where
// that makes a deny or ask match or an allow not match, never where it would widen an allow.
// The built-in policy's rules are covered row by row in bypass_table_test.cc (class 11).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "policy/policy.h"
#include "tests/unit/policy/policy_fixture.h"

namespace moat::policy {
namespace {

using testing::PolicyWorld;
using testing::write_file;

// One user layer of `text`, without the built-in default (so unmatched lines are
// defaults.command).
std::unique_ptr<Policy> load_alone(PolicyWorld& w, const std::string& text) {
  w.options.use_builtin_default = false;
  write_file(w.options.user_dir + "/10.toml", text);
  return w.load();
}

std::string decided(const Policy& p, const PolicyWorld& w, const std::string& line) {
  Decision d = p.decide_command(line, w.workspace);
  return std::string(verdict_name(d.verdict)) + " " + d.deciding.id;
}

TEST(LongOptionAbbreviation, ThePolicyReferenceExamplesMatchTheAbbreviationsGitAndRmTake) {
  std::ifstream in(std::string(MOAT_SOURCE_ROOT) + "/examples/policies/org.toml");
  std::stringstream text;
  text << in.rdbuf();
  ASSERT_FALSE(text.str().empty());
  PolicyWorld w;
  auto p = load_alone(w, text.str());
  ASSERT_TRUE(p);
  // org.no-force-push names --force, --force-with-lease and --mirror.
  EXPECT_EQ(decided(*p, w, "git push --forc origin main"), "deny org.no-force-push");
  EXPECT_EQ(decided(*p, w, "git push --force-w origin main"), "deny org.no-force-push");
  EXPECT_EQ(decided(*p, w, "git push --mirr backup"), "deny org.no-force-push");
  // org.destructive names --recursive, for rm, chmod and chown (coreutils: getopt_long).
  EXPECT_EQ(decided(*p, w, "rm --recu build"), "ask org.destructive");
  EXPECT_EQ(decided(*p, w, "chmod --rec 755 ."), "ask org.destructive");
  EXPECT_EQ(decided(*p, w, "chown --r u ."), "ask org.destructive");
  // org.git-read is pinned to /usr/bin/git, so it allows nothing here; its no_flag is the
  // built-in default.git's, tested in the bypass table (git --exec-p, git log --outp, ...).
  // org.inline-code names --eval for interpreters that take no abbreviation: python and node
  // refuse `--ev`, so it is no code flag and the rule does not match it.
  EXPECT_EQ(decided(*p, w, "node --ev 1"), "ask defaults.command");
  EXPECT_EQ(decided(*p, w, "node --eval 1"), "ask org.inline-code");
}

TEST(LongOptionAbbreviation, AnAllowIsNotWidenedByAPrefixOfTheFlagItRequires) {
  PolicyWorld w;
  auto p = load_alone(w,
                      "schema = 1\n[[command]]\nid = \"user.dry-push\"\ndecision = \"allow\"\n"
                      "program = \"git\"\nargs = [\"push\", \"**\"]\n"
                      "all_flags = [\"--dry-run\"]\n"
                      "[[command]]\nid = \"user.count\"\ndecision = \"allow\"\n"
                      "program = \"grep\"\nany_flag = [\"--count\"]\n");
  ASSERT_TRUE(p);
  EXPECT_EQ(decided(*p, w, "git push --dry-run origin main"), "allow user.dry-push");
  EXPECT_EQ(decided(*p, w, "git push --dry origin main"), "ask defaults.command");
  EXPECT_EQ(decided(*p, w, "grep --count x src/a.py"), "allow user.count");
  EXPECT_EQ(decided(*p, w, "grep --cou x src/a.py"), "ask defaults.command");
}

TEST(LongOptionAbbreviation, AnAllowsExceptionAndNoFlagCountAPrefix) {
  PolicyWorld w;
  auto p = load_alone(w,
                      "schema = 1\n[[command]]\nid = \"user.push\"\ndecision = \"allow\"\n"
                      "program = \"git\"\nargs = [\"push\", \"**\"]\nno_flag = [\"--force\"]\n"
                      "unless = { any_flag = [\"--mirror\"] }\n");
  ASSERT_TRUE(p);
  EXPECT_EQ(decided(*p, w, "git push origin main"), "allow user.push");
  EXPECT_EQ(decided(*p, w, "git push --fo origin main"), "ask defaults.command");
  EXPECT_EQ(decided(*p, w, "git push --mir backup"), "ask defaults.command");
}

TEST(LongOptionAbbreviation, ADenysExceptionIsNotSwitchedOnByAPrefix) {
  PolicyWorld w;
  auto p = load_alone(w,
                      "schema = 1\n[[command]]\nid = \"user.no-push\"\ndecision = \"deny\"\n"
                      "program = \"git\"\nargs = [\"push\", \"**\"]\n"
                      "unless = { any_flag = [\"--dry-run\"] }\n"
                      "[[command]]\nid = \"user.no-force\"\ndecision = \"deny\"\n"
                      "program = \"git\"\nargs = [\"push\", \"**\"]\nno_flag = [\"--dry-run\"]\n"
                      "any_flag = [\"--mirror\"]\n");
  ASSERT_TRUE(p);
  EXPECT_EQ(decided(*p, w, "git push --dry-run origin"), "ask defaults.command");
  EXPECT_EQ(decided(*p, w, "git push --dry origin"), "deny user.no-push");
  EXPECT_EQ(p->decide_command("git push --dry --mirr backup", w.workspace).verdict, Verdict::kDeny);
}

TEST(LongOptionAbbreviation, AWholeShorterOptionAndAGlobAreNotAbbreviations) {
  PolicyWorld w;
  auto p = load_alone(w,
                      "schema = 1\n[[command]]\nid = \"user.lease\"\ndecision = \"deny\"\n"
                      "program = \"git\"\nany_flag = [\"--force-with-lease\"]\n"
                      "[[command]]\nid = \"user.ckpt\"\ndecision = \"deny\"\n"
                      "program = \"tar\"\nany_flag = [\"--checkpoint-action\"]\n"
                      "[[command]]\nid = \"user.glob\"\ndecision = \"deny\"\n"
                      "program = \"rm\"\nany_flag = [\"--no-preserve*\"]\n");
  ASSERT_TRUE(p);
  // git's --force and tar's --checkpoint are options of their own, taken as written.
  EXPECT_EQ(decided(*p, w, "git push --force origin main"), "ask defaults.command");
  EXPECT_EQ(decided(*p, w, "git push --force-with origin main"), "deny user.lease");
  EXPECT_EQ(decided(*p, w, "tar --checkpoint=100 -xf a.tar"), "ask defaults.command");
  EXPECT_EQ(decided(*p, w, "tar --checkpoint-ac=exec=sh -xf a.tar"), "deny user.ckpt");
  // A glob already says which words it means; "--" alone ends the options.
  EXPECT_EQ(decided(*p, w, "rm --no x"), "ask defaults.command");
  EXPECT_EQ(decided(*p, w, "rm --no-preserve-root x"), "deny user.glob");
  EXPECT_EQ(decided(*p, w, "git push -- --force-with-lease"), "ask defaults.command");
}

TEST(LongOptionAbbreviation, ShellsTakeOnlyWholeLongOptions) {
  PolicyWorld w;
  auto p = load_alone(w,
                      "schema = 1\n[[command]]\nid = \"user.login\"\ndecision = \"deny\"\n"
                      "program = \"bash\"\nany_flag = [\"--login\"]\n");
  ASSERT_TRUE(p);
  // bash compares its long options whole (shell.c): `bash --log` is an error, not a login.
  EXPECT_EQ(decided(*p, w, "bash --login x.sh"), "deny user.login");
  EXPECT_EQ(decided(*p, w, "bash --log x.sh"), "ask defaults.command");
}

}  // namespace
}  // namespace moat::policy
