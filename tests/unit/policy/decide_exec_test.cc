// tests/unit/policy/decide_exec_test.cc: Policy::decide_exec, the judgement of one program a
// running command starts (issue 14, item 3): rules match the file by its path and real path,
// never by argv[0]; no match is "observed", not the command default.
#include <gtest/gtest.h>

#include <filesystem>

#include "policy/policy.h"
#include "tests/unit/policy/policy_fixture.h"

namespace moat::policy {
namespace {

using testing::PolicyWorld;
using testing::write_file;

constexpr char kRules[] = R"(schema = 1
defaults = { command = "deny" }
[[command]]
id = "t.no-curl"
decision = "deny"
program = "curl"
reason = "no downloads"
[[command]]
id = "t.inline"
decision = "ask"
program = ["python3", "python3.*"]
any_flag = ["-c"]
[[command]]
id = "t.make"
decision = "allow"
program = "make"
)";

class DecideExec : public ::testing::Test {
 protected:
  void SetUp() override {
    w_.options.headless = true;
    w_.options.use_builtin_default = false;  // these rules alone
    write_file(w_.options.user_dir + "/10.toml", kRules);
    p_ = w_.load();
    ASSERT_TRUE(p_);
  }
  Decision decide(std::vector<std::string> argv, const std::string& path) {
    std::error_code ec;
    std::string real = std::filesystem::canonical(path, ec).string();
    return p_->decide_exec(ExecFacts{std::move(argv), path, real, w_.workspace});
  }
  PolicyWorld w_;
  std::unique_ptr<Policy> p_;
};

TEST_F(DecideExec, ADeniedProgramIsDeniedByItsPathWhateverArgv0Says) {
  Decision d = decide({"innocent", "-s", "x.example"}, w_.bin + "/curl");
  EXPECT_EQ(d.verdict, Verdict::kDeny);
  EXPECT_EQ(d.deciding.id, "t.no-curl");
  EXPECT_EQ(d.decided_by, DecidedBy::kPolicy);
}

TEST_F(DecideExec, ASymlinkByAnotherNameIsJudgedByTheFileItNames) {
  std::filesystem::create_symlink(w_.bin + "/curl", w_.workspace + "/fetch");
  Decision d = decide({"./fetch"}, w_.workspace + "/fetch");
  EXPECT_EQ(d.verdict, Verdict::kDeny);
  EXPECT_EQ(d.deciding.id, "t.no-curl");
}

TEST_F(DecideExec, NoMatchingRuleIsObservedNotTheCommandDefault) {
  // defaults.command is deny: it is for the model's line, not for what programs start.
  Decision d = decide({"sed", "-i", "s/a/b/", "f"}, w_.bin + "/sed");
  EXPECT_EQ(d.verdict, Verdict::kAllow);
  EXPECT_EQ(d.decided_by, DecidedBy::kObserved);
}

TEST_F(DecideExec, ARuleOnFlagsSeesTheArgvAsExecuted) {
  Decision d = decide({"python3", "-c", "import os"}, w_.bin + "/python3");
  // An ask, headless, at exec time: [exec] headless_ask (unset: "allow") runs it, flagged.
  EXPECT_EQ(d.verdict, Verdict::kAllow);
  EXPECT_EQ(d.flagged, "t.inline");
  EXPECT_EQ(d.deciding.id, "t.inline");
  EXPECT_EQ(decide({"python3", "-m", "pytest"}, w_.bin + "/python3").decided_by,
            DecidedBy::kObserved);
}

TEST_F(DecideExec, AnAllowRuleNamesItself) {
  Decision d = decide({"make", "-j2"}, w_.bin + "/make");
  EXPECT_EQ(d.verdict, Verdict::kAllow);
  EXPECT_EQ(d.deciding.id, "t.make");
}

}  // namespace
}  // namespace moat::policy
