// tests/unit/policy/explain_test.cc: what `moat policy explain` prints, text and JSON.
#include "policy/explain.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/unit/policy/policy_fixture.h"

namespace moat::policy {
namespace {

using ::testing::HasSubstr;
using testing::PolicyWorld;

TEST(Explain, JsonHasUnitsMatchedRulesAndTheDecidingRule) {
  PolicyWorld w;
  w.options.headless = true;
  auto p = w.load();
  const std::string line = "sh -c 'git status && git push -f origin main'";
  auto j = explain_json(p->decide_command(line, w.workspace), *p, line);
  EXPECT_EQ(j["decision"], "deny");
  EXPECT_EQ(j["deciding_rule"]["id"], "default.git-force-push");
  EXPECT_EQ(j["deciding_rule"]["layer"], "builtin");
  EXPECT_EQ(j["mode"], "headless");
  EXPECT_TRUE(j["headless_downgraded"].get<bool>());
  EXPECT_EQ(j["policy_hash"], p->policy_hash());
  ASSERT_EQ(j["units"].size(), 3u);
  EXPECT_EQ(j["units"][0]["argv"], "sh -c");
  EXPECT_EQ(j["units"][1]["argv"], "git status");
  EXPECT_EQ(j["units"][1]["decision"], "allow");
  EXPECT_EQ(j["units"][2]["argv"], "git push -f origin main");
  EXPECT_EQ(j["units"][2]["origin"], "sh -c");
  EXPECT_EQ(j["units"][2]["matched"][0]["id"], "default.git-force-push");
  EXPECT_EQ(j["units"][2]["matched"][0]["decision"], "ask");
}

// Who decided is a DecidedBy in the decision; explain's JSON writes its name, as it always did.
TEST(Explain, JsonNamesWhoDecidedAsBefore) {
  PolicyWorld w;
  auto p = w.load();
  const std::string line = "git push -f origin main";
  auto j = explain_json(p->decide_command(line, w.workspace), *p, line);
  EXPECT_EQ(j["decided_by"], "policy");
  auto outside = explain_json(p->decide_path("/etc/profile.d/x.sh", Access::kWrite), *p, "");
  EXPECT_EQ(outside["decided_by"], "default");
}

TEST(Explain, TextShowsEachUnitAndTheResult) {
  PolicyWorld w;
  auto p = w.load();
  const std::string line = "git status; rm -rf build";
  std::string text = explain_text(p->decide_command(line, w.workspace), *p, line);
  EXPECT_THAT(text, HasSubstr("unit 1  git status"));
  EXPECT_THAT(text, HasSubstr("allow  default.git"));
  EXPECT_THAT(text, HasSubstr("unit 2  rm -rf build"));
  EXPECT_THAT(
      text,
      HasSubstr("also matched: default.edit-tools (allow, builtin) -> overridden (ask > allow)"));
  EXPECT_THAT(text, HasSubstr("result  ASK"));
  EXPECT_THAT(text, HasSubstr("deciding=default.rm-recursive"));
}

// Each unit shows the files it reads by redirection and the variables set for it, and a unit
// that is not allowed says why when the result line does not.
TEST(Explain, UnitsShowTheirReadsAssignmentsAndWhy) {
  PolicyWorld w;
  auto p = w.load();
  const std::string line = "PATH=./tools ls; grep -c . < ~/.ssh/id_ed25519";
  Decision d = p->decide_command(line, w.workspace);
  std::string text = explain_text(d, *p, line);
  EXPECT_THAT(text, HasSubstr("unit 1  PATH=\u2026 ls"));
  EXPECT_THAT(text, HasSubstr("ask    builtin.code-env"));
  EXPECT_THAT(text, HasSubstr("why: PATH=./tools (prefix): the shell and every exec*p caller"));
  EXPECT_THAT(text, HasSubstr("reads: '~/.ssh/id_ed25519'"));
  EXPECT_THAT(text, HasSubstr("deciding=default.secrets"));
  auto j = explain_json(d, *p, line);
  EXPECT_EQ(j["units"][0]["sets"], nlohmann::json::array({"PATH"}));
  EXPECT_EQ(j["units"][1]["reads"], nlohmann::json::array({"~/.ssh/id_ed25519"}));
}

TEST(Explain, PathDecisionsShowTheRule) {
  PolicyWorld w;
  auto p = w.load();
  std::string path = p->expand_path("~/.ssh/id_rsa");
  EXPECT_EQ(path, w.home + "/.ssh/id_rsa");
  std::string text = explain_text(p->decide_path(path, Access::kRead), *p, "~/.ssh/id_rsa");
  EXPECT_THAT(text, HasSubstr("result  DENY"));
  EXPECT_THAT(text, HasSubstr("deciding=default.secrets"));
}

}  // namespace
}  // namespace moat::policy
