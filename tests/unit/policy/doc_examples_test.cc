// tests/unit/policy/doc_examples_test.cc: every rule example in the policy reference
// (shared/POLICY.md) and in docs/policy.md passes its own tests.match / tests.not_match, run
// the way `moat policy test` runs them (run_rule_tests).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "policy/lint.h"
#include "policy/policy.h"
#include "tests/unit/policy/policy_fixture.h"

namespace moat::policy {
namespace {

using testing::PolicyWorld;
using testing::write_file;

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The [[command]], [[path]] and [[tool]] tables of every ```toml block, as one policy file.
// Other tables are left out: [constraints] only counts in a system layer, and the reference's
// [[network]] rules have no tests to run (they are judged by host and port, not a line).
std::string rule_tables(const std::string& markdown, int& rules) {
  std::istringstream in(markdown);
  std::string line, out = "schema = 1\n";
  bool in_block = false, in_rule = false;
  while (std::getline(in, line)) {
    if (line.rfind("```", 0) == 0) {
      in_block = !in_block && line == "```toml";
      in_rule = false;
      continue;
    }
    if (!in_block) continue;
    if (line.rfind("[", 0) == 0) {
      in_rule = line == "[[command]]" || line == "[[path]]" || line == "[[tool]]";
      rules += in_rule ? 1 : 0;
    }
    if (in_rule) out += line + "\n";
  }
  return out;
}

// Loads the examples of one document as a user layer (no default policy) and runs their tests.
void run_examples(const std::string& doc_path, int min_tests) {
  SCOPED_TRACE(doc_path);
  const std::string doc = read_text(doc_path);
  ASSERT_FALSE(doc.empty()) << "cannot read " << doc_path;
  int rules = 0;
  const std::string policy_text = rule_tables(doc, rules);
  ASSERT_GT(rules, 0) << "no ```toml rule example found";
  PolicyWorld w;
  w.options.use_builtin_default = false;
  write_file(w.options.user_dir + "/examples.toml", policy_text);
  auto p = w.load();
  ASSERT_TRUE(p) << policy_text;
  int tests = 0;
  for (const auto& r : run_rule_tests(*p, w.workspace)) {
    ++tests;
    EXPECT_EQ(r.outcome, "pass") << r.rule << " " << (r.expect_match ? "match " : "not_match ")
                                 << r.input << ": " << r.detail;
  }
  EXPECT_GE(tests, min_tests);
}

TEST(DocExamples, EveryRuleExampleOfTheReferencePassesItsTests) {
  const std::string path = std::string(MOAT_SOURCE_ROOT) + "/../shared/POLICY.md";
  if (!std::filesystem::exists(path))
    GTEST_SKIP() << path << " is absent: the reference lives next to the repository, not in it";
  run_examples(path, 3);
}

TEST(DocExamples, EveryRuleExampleOfDocsPolicyPassesItsTests) {
  run_examples(std::string(MOAT_SOURCE_ROOT) + "/docs/policy.md", 3);
}

}  // namespace
}  // namespace moat::policy
