// tests/unit/sandbox/refusal_hint_test.cc: every refusal names the one option or rule that would
// allow it, and whose it is (sandbox/refusal_hint.h), one case per layer.
#include "sandbox/refusal_hint.h"

#include <gtest/gtest.h>

#include <string>


namespace moat::sandbox {
namespace {

policy::Decision refused(policy::Verdict v, const std::string& layer, const std::string& file,
                         int line = 12) {
  policy::Decision d;
  d.verdict = v;
  d.deciding = {"r.id", layer, file, line};
  d.decided_by = policy::DecidedBy::kPolicy;
  return d;
}

TEST(RefusalHint, ASystemRuleCanBeAllowedOnlyByItsOwner) {
  const std::string hint =
      how_to_allow(refused(policy::Verdict::kDeny, "system", "/etc/moat/policy.d/x.toml"), "/u");
  EXPECT_NE(hint.find("only the owner of the organisation's system layer "
                      "(/etc/moat/policy.d/x.toml:12)"),
            std::string::npos)
      << hint;
}

TEST(RefusalHint, APolicyFileIsDropped) {
  EXPECT_EQ(how_to_allow(refused(policy::Verdict::kDeny, "cli", "/tmp/narrow.toml"), "/u"),
            "drop --policy /tmp/narrow.toml");
}

TEST(RefusalHint, ABuiltinAskIsLoosenedInTheUserLayerNamingItsDirectory) {
  policy::Decision d = refused(policy::Verdict::kDeny, "builtin", "", 0);
  d.deciding.id = "default.inline-code";
  d.headless_downgraded = true;
  const std::string hint = how_to_allow(d, "/home/me/.config/moat/policy.d");
  EXPECT_NE(hint.find("[[command]] rule"), std::string::npos) << hint;
  EXPECT_NE(hint.find("(/home/me/.config/moat/policy.d/)"), std::string::npos) << hint;
  EXPECT_NE(hint.find("default.inline-code"), std::string::npos) << hint;
  EXPECT_NE(how_to_allow(d, "/u", "[[path]]").find("[[path]] rule"), std::string::npos);
}

TEST(RefusalHint, ABuiltinDenyIsLeftOutWithNoDefaultPolicy) {
  const std::string hint = how_to_allow(refused(policy::Verdict::kDeny, "builtin", ""), "/u");
  EXPECT_NE(hint.find("--no-default-policy"), std::string::npos) << hint;
}

TEST(RefusalHint, UserAndProjectRulesNameTheirFileAndLine) {
  EXPECT_NE(how_to_allow(refused(policy::Verdict::kDeny, "user", "/u/10.toml", 3), "/u")
                .find("rule r.id in your user layer (/u/10.toml:3)"),
            std::string::npos);
  EXPECT_NE(how_to_allow(refused(policy::Verdict::kDeny, "project", "/w/.moat/policy.toml"), "/u")
                .find("/w/.moat/policy.toml:12"),
            std::string::npos);
}

TEST(RefusalHint, APersonsDeclineOrTheWatchsOwnRefusalHasNone) {
  policy::Decision d = refused(policy::Verdict::kDeny, "system", "/x.toml");
  d.decided_by = policy::DecidedBy::kUser;
  EXPECT_EQ(how_to_allow(d, "/u"), "");
  d.decided_by = policy::DecidedBy::kMoat;
  EXPECT_EQ(how_to_allow(d, "/u"), "");
}

TEST(RefusalText, EndsWithWhatWouldAllowItInOneLine) {
  policy::Decision d = refused(policy::Verdict::kDeny, "cli", "/tmp/narrow.toml", 4);
  d.reason = "Not today.";
  const std::string text = refusal_text(d, "the command 'tar x' was", "/u");
  EXPECT_EQ(text,
            "the command 'tar x' was refused by policy (deny): rule r.id (cli, "
            "/tmp/narrow.toml:4): Not today. To allow it: drop --policy /tmp/narrow.toml.");
}

}  // namespace
}  // namespace moat::sandbox
