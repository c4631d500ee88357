// tests/unit/policy/exec_settings_test.cc: the [exec] table (issue 25): programs in a writable
// root (a project's own build) run by default, on the model's line and when a call starts
// them; headless, an ask met at exec time runs and is flagged; an organisation's layer can make
// either ask or deny.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "policy/code_env.h"
#include "policy/layer.h"
#include "policy/toml_load.h"
#include "tests/unit/policy/policy_fixture.h"

namespace moat::policy {
namespace {

using ::testing::HasSubstr;
using testing::PolicyWorld;
using testing::write_file;

// An organisation's layer that is the shipped default with one [exec] key changed: the
// same rules (now in the system layer), so only that setting differs.
std::string default_with(const std::string& key, const std::string& value) {
  std::string text(builtin_default_policy_text());
  const std::string from = key + " = \"allow\"";
  auto pos = text.find(from);
  EXPECT_NE(pos, std::string::npos) << from;
  if (pos != std::string::npos) text.replace(pos, from.size(), key + " = \"" + value + "\"");
  return text;
}

class ExecSettingsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    write_file(w_.workspace + "/hello",
               "\x7f"
               "ELF compiled by the project's make\n",
               0755);
    std::filesystem::create_directories(w_.workspace + "/.venv/bin");
    std::filesystem::create_symlink(w_.bin + "/python3", w_.workspace + "/.venv/bin/python");
  }
  // What the exec watch reports for a program a running call starts.
  Decision exec(const Policy& p, std::vector<std::string> argv, const std::string& path) {
    std::error_code ec;
    std::string real = std::filesystem::canonical(path, ec).string();
    return p.decide_exec(ExecFacts{std::move(argv), path, real, w_.workspace});
  }
  PolicyWorld w_;
};

TEST_F(ExecSettingsTest, AProgramBuiltInTheWorkspaceRunsObservedWhenACallStartsIt) {
  w_.options.headless = true;
  auto p = w_.load();
  ASSERT_TRUE(p);
  Decision d = exec(*p, {"./hello"}, w_.workspace + "/hello");
  EXPECT_EQ(d.verdict, Verdict::kAllow) << d.reason;
  EXPECT_EQ(d.decided_by, DecidedBy::kObserved);
  EXPECT_EQ(d.deciding.id, "exec.workspace_programs");
  EXPECT_TRUE(d.flagged.empty());
}

TEST_F(ExecSettingsTest, TheModelsLineRunsAProgramBuiltInTheWorkspaceByDefault) {
  w_.options.headless = true;
  auto p = w_.load();
  ASSERT_TRUE(p);
  for (const char* line : {"./hello", "./hello --verbose > out.txt", "make && ./not-built-yet",
                           "cd src && ./hello", ".venv/bin/python -m pytest", "./run_tests.sh"}) {
    SCOPED_TRACE(line);
    Decision d = p->decide_command(line, w_.workspace);
    EXPECT_EQ(d.verdict, Verdict::kAllow) << d.reason << "\n" << d.detail().dump(1);
  }
  Decision d = p->decide_command("./hello", w_.workspace);
  EXPECT_EQ(d.deciding.id, "exec.workspace_programs");
  EXPECT_EQ(d.deciding.layer, "builtin");
  EXPECT_EQ(d.deciding.file, kBuiltinDefaultFile);
}

TEST_F(ExecSettingsTest, ANameBasedAllowStillNeverMatchesAWorkspaceFile) {
  // The default allows ls by name; a file named ls in the workspace is not that ls, and its
  // own name rules (curl's) still ask.
  std::filesystem::create_symlink(w_.bin + "/curl", w_.workspace + "/ls");
  auto p = w_.load();
  ASSERT_TRUE(p);
  Decision d = p->decide_command("./ls -la", w_.workspace);
  EXPECT_EQ(d.verdict, Verdict::kAsk);
  EXPECT_EQ(d.deciding.id, "default.network-tools");
  for (const auto& m : d.matched) EXPECT_NE(m.id, "default.read-only");
  // A person's setting is not an allow rule: it loosens no ask of the default.
  write_file(w_.options.user_dir + "/u.toml",
             "schema = 1\n[exec]\nworkspace_programs = \"allow\"\n");
  EXPECT_EQ(w_.load()->decide_command("./ls -la", w_.workspace).deciding.id,
            "default.network-tools");
}

TEST_F(ExecSettingsTest, AnOrganisationThatMakesWorkspaceProgramsAskIsAskedAndRefusedHeadless) {
  if (!w_.set_system_layer(default_with("workspace_programs", "ask")))
    GTEST_SKIP() << "a system layer needs a root-owned directory";
  auto interactive = w_.load();
  ASSERT_TRUE(interactive);
  Decision line = interactive->decide_command("./hello", w_.workspace);
  EXPECT_EQ(line.verdict, Verdict::kAsk);
  EXPECT_EQ(line.deciding.id, "exec.workspace_programs");
  EXPECT_EQ(line.deciding.layer, "system");
  EXPECT_THAT(line.reason, HasSubstr("could have written or replaced"));
  EXPECT_EQ(exec(*interactive, {"./hello"}, w_.workspace + "/hello").verdict, Verdict::kAsk);

  w_.options.headless = true;
  auto headless = w_.load();
  Decision refused = headless->decide_command("make && ./hello", w_.workspace);
  EXPECT_EQ(refused.verdict, Verdict::kDeny);
  EXPECT_TRUE(refused.headless_downgraded);
  EXPECT_EQ(refused.deciding.id, "exec.workspace_programs");
  // Started by an allowed call, headless: [exec] headless_ask (allow here) runs and flags it.
  Decision started = exec(*headless, {"./hello"}, w_.workspace + "/hello");
  EXPECT_EQ(started.verdict, Verdict::kAllow);
  EXPECT_EQ(started.flagged, "exec.workspace_programs");
}

TEST_F(ExecSettingsTest, AnOrganisationThatDeniesWorkspaceProgramsRefusesThemEverywhere) {
  if (!w_.set_system_layer(default_with("workspace_programs", "deny")))
    GTEST_SKIP() << "a system layer needs a root-owned directory";
  auto p = w_.load();
  ASSERT_TRUE(p);
  EXPECT_EQ(p->decide_command("./hello", w_.workspace).verdict, Verdict::kDeny);
  EXPECT_EQ(p->decide_command(".venv/bin/python x.py", w_.workspace).verdict, Verdict::kDeny);
  Decision d = exec(*p, {"./hello"}, w_.workspace + "/hello");
  EXPECT_EQ(d.verdict, Verdict::kDeny);
  EXPECT_EQ(d.deciding.id, "exec.workspace_programs");
  EXPECT_EQ(d.decided_by, DecidedBy::kPolicy);
  // What the person typed is bound by the organisation too.
  EXPECT_EQ(p->decide_typed("./hello", w_.workspace).verdict, Verdict::kDeny);
}

TEST_F(ExecSettingsTest, AHeadlessAskAtExecTimeRunsAndIsFlaggedByDefault) {
  w_.options.headless = true;
  auto p = w_.load();
  ASSERT_TRUE(p);
  Decision d = exec(*p, {"python3", "-c", "import sys"}, w_.bin + "/python3");
  EXPECT_EQ(d.verdict, Verdict::kAllow) << d.reason;
  EXPECT_EQ(d.decided_by, DecidedBy::kObserved);
  EXPECT_EQ(d.flagged, "default.inline-code");
  EXPECT_EQ(d.deciding.id, "default.inline-code");
  EXPECT_FALSE(d.headless_downgraded);
  EXPECT_THAT(d.reason, HasSubstr("ran unasked"));
  EXPECT_THAT(d.reason, HasSubstr("default.inline-code would have asked"));
  // The model's own line keeps ask => deny.
  Decision line = p->decide_command("python3 -c 'import sys'", w_.workspace);
  EXPECT_EQ(line.verdict, Verdict::kDeny);
  EXPECT_TRUE(line.headless_downgraded);
  EXPECT_TRUE(line.flagged.empty());
  // A deny holds at exec time, headless or not.
  const std::string key = w_.home + "/.ssh/x";
  Decision secret = p->decide_exec(ExecFacts{{"x"}, key, key, w_.workspace});
  EXPECT_EQ(secret.verdict, Verdict::kDeny);
  EXPECT_TRUE(secret.flagged.empty());
}

TEST_F(ExecSettingsTest, AnInteractiveAskAtExecTimeStillGoesToThePerson) {
  auto p = w_.load();
  ASSERT_TRUE(p);
  Decision d = exec(*p, {"python3", "-c", "import sys"}, w_.bin + "/python3");
  EXPECT_EQ(d.verdict, Verdict::kAsk);
  EXPECT_TRUE(d.flagged.empty());
}

TEST_F(ExecSettingsTest, AnOrganisationsHeadlessAskDenyRefusesWhatACallStarts) {
  if (!w_.set_system_layer(default_with("headless_ask", "deny")))
    GTEST_SKIP() << "a system layer needs a root-owned directory";
  w_.options.headless = true;
  auto p = w_.load();
  ASSERT_TRUE(p);
  Decision d = exec(*p, {"python3", "-c", "import sys"}, w_.bin + "/python3");
  EXPECT_EQ(d.verdict, Verdict::kDeny);
  EXPECT_TRUE(d.headless_downgraded);
  EXPECT_EQ(d.deciding.id, "default.inline-code");
  EXPECT_TRUE(d.flagged.empty());
  // A person cannot loosen it back.
  write_file(w_.options.user_dir + "/u.toml", "schema = 1\n[exec]\nheadless_ask = \"allow\"\n");
  auto with_user = w_.load();
  EXPECT_EQ(exec(*with_user, {"python3", "-c", "x"}, w_.bin + "/python3").verdict, Verdict::kDeny);
  EXPECT_THAT(with_user->notices().back(), HasSubstr("exec.headless_ask = \"allow\" is ignored"));
}

TEST_F(ExecSettingsTest, APersonsLayerMaySetTheExecKeysTheBuiltinDefaultSets) {
  write_file(w_.options.user_dir + "/u.toml",
             "schema = 1\n[exec]\nworkspace_programs = \"ask\"\nheadless_ask = \"deny\"\n");
  w_.options.headless = true;
  auto p = w_.load();
  ASSERT_TRUE(p);
  Decision d = exec(*p, {"./hello"}, w_.workspace + "/hello");
  EXPECT_EQ(d.verdict, Verdict::kDeny);
  EXPECT_EQ(d.deciding.layer, "user");
  EXPECT_EQ(d.deciding.line, 2);
}

TEST(ExecSettingsLoad, WrongValuesNameTheKeyAndTheAcceptedOnes) {
  auto error_of = [](const std::string& text) {
    ParseOptions o;
    o.file = "t.toml";
    auto p = parse_policy_text(text, o, nullptr);
    return p ? std::string() : p.error().message();
  };
  EXPECT_THAT(error_of("schema = 1\n[exec]\nheadless_ask = \"ask\"\n"),
              HasSubstr("t.toml:3:16: exec.headless_ask: expected one of \"allow\", \"deny\", "
                        "got \"ask\""));
  EXPECT_THAT(error_of("schema = 1\n[exec]\nworkspace_programs = \"maybe\"\n"),
              HasSubstr("t.toml:3:22: exec.workspace_programs: expected one of \"allow\", "
                        "\"ask\", \"deny\", got \"maybe\""));
  EXPECT_THAT(error_of("schema = 1\n[exec]\nworkspace_program = \"ask\"\n"),
              HasSubstr("t.toml:3:1: exec.workspace_program"));
  ParseOptions o;
  auto ok = parse_policy_text("schema = 1\n[exec]\nworkspace_programs = \"deny\"\n", o, nullptr);
  ASSERT_TRUE(ok.has_value());
  EXPECT_EQ(ok->exec.workspace_programs, Verdict::kDeny);
  EXPECT_FALSE(ok->exec.headless_ask.has_value());
}

// Issue 26 item 6: a program with no name on disk (a memfd: /proc/self/fd/3 ->
// "/memfd:innocent (deleted)") was allowed with no rule where an organisation refuses programs
// from writable roots; it is judged as one.
TEST_F(ExecSettingsTest, AProgramWithNoNameOnDiskIsJudgedAsAProgramInAWritableRoot) {
  if (!w_.set_system_layer(default_with("workspace_programs", "deny")))
    GTEST_SKIP() << "a system layer needs a root-owned directory";
  w_.options.headless = true;
  auto p = w_.load();
  ASSERT_TRUE(p);
  ExecFacts memfd{{"innocent"}, "/proc/self/fd/3", "/memfd:innocent (deleted)", w_.workspace};
  EXPECT_EQ(p->decide_exec(memfd).verdict, Verdict::kAllow);  // by its name: a system path
  memfd.unnamed = true;
  Decision d = p->decide_exec(memfd);
  EXPECT_EQ(d.verdict, Verdict::kDeny) << d.reason;
  EXPECT_EQ(d.deciding.id, "exec.workspace_programs");
}

// Issue 26 item 5: the dynamic loader's variables of a new environment, and its own options,
// are judged as the same assignment on the model's line (builtin.code-env): an ask, which
// headless runs flagged by default, and a library path of system directories is harmless.
TEST_F(ExecSettingsTest, TheLoadersVariablesAtExecAreJudgedByTheCodeEnvTable) {
  w_.options.headless = true;
  auto p = w_.load();
  ASSERT_TRUE(p);
  ExecFacts t{{"true"}, "/usr/bin/true", "/usr/bin/true", w_.workspace};
  t.loads.push_back({"LD_PRELOAD", "./evil.so", "in its environment"});
  Decision d = p->decide_exec(t);
  EXPECT_EQ(d.verdict, Verdict::kAllow) << d.reason;
  EXPECT_EQ(d.flagged, "builtin.code-env");
  EXPECT_THAT(d.reason, HasSubstr("LD_PRELOAD=./evil.so (in its environment)"));
  t.loads = {{"LD_LIBRARY_PATH", "/usr/lib:/lib", "in its environment"}};
  d = p->decide_exec(t);
  EXPECT_TRUE(d.flagged.empty()) << d.reason;
  t.loads = {{"LD_LIBRARY_PATH", w_.workspace + "/.libs",
              "the dynamic loader's option --library-path"}};
  EXPECT_EQ(p->decide_exec(t).flagged, "builtin.code-env");
}

TEST(CodeEnvAtExec, OnlyTheRowsGlibcReadsIntoAnyProgramAreReadAtExec) {
  for (const char* name : {"LD_PRELOAD", "LD_AUDIT", "LD_LIBRARY_PATH", "GCONV_PATH"})
    EXPECT_TRUE(is_read_at_exec(name)) << name;
  // Set by build tools for every child (npm's PATH, make's CC): judged on the model's line only.
  for (const char* name : {"PATH", "CC", "npm_config_cache", "PYTHONPATH", "HOME", "LD_BIND_NOW"})
    EXPECT_FALSE(is_read_at_exec(name)) << name;
}

}  // namespace
}  // namespace moat::policy
