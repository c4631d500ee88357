// tests/unit/policy/lint_test.cc: `moat policy test` on the shipped policies, and lint's
// findings (load errors, ignored allows, shadowed rules).
#include "policy/lint.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "tests/unit/policy/policy_fixture.h"

namespace moat::policy {
namespace {

using ::testing::HasSubstr;
using testing::PolicyWorld;
using testing::write_file;

void add_default_policy_programs(PolicyWorld& w) {
  for (const char* p : {"mkfs.ext4", "shred", "su", "wget", "npm", "cargo", "go", "node", "perl",
                        "ruby", "python", "tar", "sort", "mkdir", "cp", "mv", "cmake", "ctest", "yarn",
                        "pnpm", "pip", "pip3"})
    w.add_program(p);
}

TEST(RuleTests, EveryTestOfTheDefaultPolicyPasses) {
  PolicyWorld w;
  add_default_policy_programs(w);
  auto p = w.load();
  ASSERT_TRUE(p);
  auto results = run_rule_tests(*p, w.workspace);
  int pass = 0;
  for (const auto& r : results) {
    EXPECT_EQ(r.outcome, "pass") << r.rule << " " << (r.expect_match ? "match " : "not_match ")
                                 << r.input << ": " << r.detail;
    pass += r.outcome == "pass";
  }
  EXPECT_GT(pass, 100);
}

TEST(RuleTests, AWrongExpectationFailsWithTheDecisionThatHappened) {
  PolicyWorld w;
  write_file(w.options.user_dir + "/u.toml",
             "schema = 1\n[[command]]\nid = \"u.rm\"\ndecision = \"deny\"\nprogram = \"rm\"\n"
             "any_flag = \"-r\"\ntests.match = [\"rm x\"]\ntests.not_match = [\"rm -r x\"]\n");
  auto p = w.load();
  auto results = run_rule_tests(*p, w.workspace);
  int failed = 0;
  for (const auto& r : results) {
    if (r.rule != "u.rm") continue;
    EXPECT_EQ(r.outcome, "fail") << r.input;
    ++failed;
  }
  EXPECT_EQ(failed, 2);
}

TEST(RuleTests, MissingProgramsAreSkippedNotPassed) {
  PolicyWorld w;
  write_file(w.options.user_dir + "/u.toml",
             "schema = 1\n[[command]]\nid = \"u.frob\"\ndecision = \"allow\"\nprogram = \"frob\"\n"
             "tests.match = [\"frob --x\"]\n");
  auto p = w.load();
  for (const auto& r : run_rule_tests(*p, w.workspace)) {
    if (r.rule != "u.frob") continue;
    EXPECT_EQ(r.outcome, "skip");
    EXPECT_THAT(r.detail, HasSubstr("not installed"));
  }
}

// A home under /tmp (uid 65534's in CI) puts ~/.bashrc under the default policy's `/tmp/**`
// write allow: a test about the person's home then says nothing (the sandbox's /tmp is its
// own) and is skipped naming the home, where it failed before; other tests still run.
TEST(RuleTests, ATestAboutTheHomeIsSkippedWhenTheHomeIsUnderAWritableRoot) {
  PolicyWorld w;
  add_default_policy_programs(w);
  w.options.home = "/tmp/moat-policy-test-home";
  auto p = w.load();
  ASSERT_TRUE(p);
  int skipped = 0, passed = 0;
  for (const auto& r : run_rule_tests(*p, w.workspace)) {
    EXPECT_NE(r.outcome, "fail") << r.rule << " " << r.input << ": " << r.detail;
    passed += r.outcome == "pass";
    if (r.rule != "default.workspace-write" || r.input != "~/.bashrc") continue;
    EXPECT_EQ(r.outcome, "skip");
    EXPECT_THAT(r.detail, HasSubstr("~ is /tmp/moat-policy-test-home, under /tmp"));
    ++skipped;
  }
  EXPECT_EQ(skipped, 1);
  EXPECT_GT(passed, 100);
}

TEST(Lint, TheDefaultPolicyHasNoFindings) {
  PolicyWorld w;
  for (const auto& f : lint_policy(w.options))
    ADD_FAILURE() << f.severity << " " << f.where << " " << f.message;
}

TEST(Lint, LoadErrorsAreReportedWithFileLineColumn) {
  PolicyWorld w;
  write_file(w.options.user_dir + "/u.toml",
             "schema = 1\n[[command]]\nid = \"a\"\ndecisoin = \"deny\"\n");
  auto findings = lint_policy(w.options);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].severity, "error");
  EXPECT_THAT(findings[0].message, HasSubstr("u.toml:4:1: command[0].decisoin: unknown key"));
}

TEST(Lint, ShadowedAndIgnoredRulesAreWarnings) {
  PolicyWorld w;
  write_file(
      w.options.user_dir + "/u.toml",
      "schema = 1\n[[command]]\nid = \"u.curl-ok\"\ndecision = \"allow\"\nprogram = \"curl\"\n"
      "[[command]]\nid = \"u.no-curl\"\ndecision = \"deny\"\nprogram = \"curl\"\n"
      "[[tool]]\nid = \"u.all\"\ndecision = \"deny\"\ntool = \"*\"\n");
  write_file(w.root + "/cli.toml",
             "schema = 1\n[[command]]\nid = \"cli.ok\"\ndecision = \"allow\"\nprogram = \"ls\"\n");
  w.options.extra_files = {w.root + "/cli.toml"};
  std::vector<std::string> messages;
  for (const auto& f : lint_policy(w.options)) {
    EXPECT_EQ(f.severity, "warning") << f.message;
    messages.push_back(f.message);
  }
  EXPECT_THAT(messages,
              ::testing::Contains(HasSubstr("u.curl-ok (allow) can never decide: u.no-curl")));
  EXPECT_THAT(messages, ::testing::Contains(HasSubstr("default.tools can never decide: u.all")));
  EXPECT_THAT(messages,
              ::testing::Contains(HasSubstr(
                  "allow rule cli.ok is ignored: command-line policy files may only narrow")));
}

// A user allow loosens the built-in default's asks (docs/policy.md "How layers combine"), so it
// is not a rule that can never decide; a built-in deny still shadows it.
TEST(Lint, AUserAllowOverABuiltinAskIsNotShadowed) {
  PolicyWorld w;
  write_file(
      w.options.user_dir + "/u.toml",
      "schema = 1\n[[command]]\nid = \"u.curl\"\ndecision = \"allow\"\nprogram = \"curl\"\n");
  for (const auto& f : lint_policy(w.options))
    ADD_FAILURE() << f.severity << " " << f.where << " " << f.message;
}

// A value a layer may not set (looser than the layer before it allows) is reported.
TEST(Lint, ALooserSettingALayerMayNotSetIsReported) {
  PolicyWorld w;
  write_file(w.options.user_dir + "/u.toml", "schema = 1\n[exec]\nworkspace_programs = \"ask\"\n");
  write_file(w.root + "/cli.toml", "schema = 1\n[exec]\nworkspace_programs = \"allow\"\n");
  w.options.extra_files = {w.root + "/cli.toml"};
  std::vector<std::string> messages;
  for (const auto& f : lint_policy(w.options)) messages.push_back(f.message);
  EXPECT_THAT(messages, ::testing::Contains(HasSubstr(
                            "cli.toml:2: exec.workspace_programs = \"allow\" is ignored: a cli "
                            "layer may only make it stricter than the user layer's \"ask\"")));
}

TEST(Lint, TheExampleOrganisationPolicyLintsAndItsTestsPass) {
  PolicyWorld w;
  std::ifstream in(std::string(MOAT_SOURCE_ROOT) + "/examples/policies/org.toml");
  std::stringstream ss;
  ss << in.rdbuf();
  // As a user layer (a system layer needs a root-owned directory); constraints then only
  // produce a notice.
  write_file(w.options.user_dir + "/00-org.toml", ss.str());
  w.options.use_builtin_default = false;
  for (const auto& f : lint_policy(w.options)) EXPECT_NE(f.severity, "error") << f.message;
  add_default_policy_programs(w);
  auto p = w.load();
  ASSERT_TRUE(p);
  for (const auto& r : run_rule_tests(*p, w.workspace))
    EXPECT_NE(r.outcome, "fail") << r.rule << " " << r.input << ": " << r.detail;
}

}  // namespace
}  // namespace moat::policy
