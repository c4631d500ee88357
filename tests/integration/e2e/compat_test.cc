// tests/integration/e2e/compat_test.cc: the compatibility suite (issue 25 item 5). Each project
// of tests/compat is built and tested as its README says, three ways under the built-in
// default policy (no --permissive, no system layer): `moat sandbox exec`, `moat run
// --headless` on a replay whose turns run the build and then the tests, and a `moat batch`
// check. Each must pass with no refusal and no question: the exit codes, the tool results and
// every record of the audit logs say so. At a terminal (tmux), the C project's session asks
// nothing.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "base/shell_words.h"
#include "e2e_support.h"
#include "tests/compat/compat_projects.h"
#include "tmux_session.h"

namespace moat::e2e {
namespace {

namespace fs = std::filesystem;
using compat::Project;
using nlohmann::json;

constexpr const char* kTask = "Build the project and run its tests.";

// What a run's records hold that the suite must not see: a refusal, an ask, a person's answer.
struct AuditFindings {
  int logs = 0, records = 0, typed = 0;
  std::vector<json> call_exits;       // each tool call's exit code, in the logs' order
  std::vector<std::string> refusals;  // one line each: what, the decision, the rule, the reason
  std::vector<std::string> flagged_records;  // ran headless although an ask rule met them
};

std::string describe(const json& r) {
  std::string what = r.value("type", "");
  for (const char* key : {"argv", "input", "command", "host"})
    if (r.contains(key)) what += " " + r[key].dump();
  const json rule = r.contains("rule") ? r["rule"] : r.value("deciding_rule", json());
  return what + ": " + r.value("result", r.value("decision", "")) + " by " +
         r.value("decided_by", "?") + " (rule " + rule.dump() + ") " + r.value("reason", "") +
         r.value("error", "");
}

// Every record of every audit log under `dir`: each decision and exec allowed, none answered by
// a person (a line the person typed is theirs), no call with refused programs, no connection
// refused; each log verifies.
AuditFindings audit_findings(const std::string& dir) {
  AuditFindings f;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().extension() != ".jsonl") continue;
    ++f.logs;
    const Run v = run({moat_bin(), "audit", "verify", it->path().string()});
    if (v.exit_code != 0) f.refusals.push_back(it->path().string() + " does not verify: " + v.out);
    std::istringstream in(read_file(it->path().string()));
    for (std::string line; std::getline(in, line);) {
      const json r = json::parse(line, nullptr, false);
      if (!r.is_object()) continue;
      ++f.records;
      const std::string type = r.value("type", "");
      if (type == "exec" && r.contains("flagged")) f.flagged_records.push_back(describe(r));
      if (type == "call") f.call_exits.push_back(r.value("exit_code", json()));
      const bool judged = type == "decision" || (type == "exec" && r.contains("result"));
      // What a person typed (moat sandbox exec CMD, a batch check) is theirs: decided_by
      // "user" with the rule "person" (docs/sessions.md), not a question answered.
      const bool typed = type == "decision" && r.value("decided_by", "") == "user" &&
                         r.value("deciding_rule", json::object()).value("id", "") == "person";
      if (typed) ++f.typed;
      if ((judged && r.value("result", "") != "allow") ||
          (r.value("decided_by", "") == "user" && !typed) ||
          (type == "call" && r.value("refused_execs", 0) != 0) ||
          (type == "net" && r.value("decision", "") != "allow"))
        f.refusals.push_back(describe(r));
    }
  }
  return f;
}

// How moat shows a question: a highlighted "moat asks", then the choices (agent/console*.cc,
// agent/console_question.cc).
constexpr const char* kQuestionMarks[] = {"moat asks", "deny [n]?"};

bool shows_a_question(const std::string& text) {
  for (const char* mark : kQuestionMarks)
    if (text.find(mark) != std::string::npos) return true;
  return false;
}

// What a person or the model would have read: no refusal, no question.
void expect_no_refusal_or_question(const std::string& text, const std::string& what) {
  EXPECT_EQ(text.find("refused"), std::string::npos) << what << ":\n" << text;
  EXPECT_FALSE(shows_a_question(text)) << what << " asked:\n" << text;
}

class CompatTest : public ::testing::Test {
 protected:
  // The project copied into a fresh workspace, its registry serving, or a skip with the reason.
  void set_up(const Project& p) {
    std::string why;
    if (!sandbox_available(&why)) GTEST_SKIP() << why;
    why = compat::missing_for(p);
    if (!why.empty()) GTEST_SKIP() << why;
    project_ = &p;
    commands_ = compat::commands_of(p);
    ASSERT_FALSE(commands_.build.empty() || commands_.test.empty())
        << "tests/compat/" << p.dir << "/README.md has no \"Build: `...`, then test: `...`\"";
    ws_ = dir_.path() + "/" + p.dir;
    ASSERT_TRUE(compat::copy_project(p, ws_)) << ws_;
    if (p.is_repository) {
      ASSERT_TRUE(compat::make_repository(ws_)) << ws_;
    }
    if (p.needs != compat::Needs::kNpmRegistry) return;
    registry_ = std::make_unique<compat::NpmRegistry>(dir_.path(), std::vector<std::string>{ws_});
    ASSERT_GT(registry_->port(), 0) << registry_->log();
    fs::create_directories(user_policy_dir());
    std::ofstream(user_policy_dir() + "/50-compat-registry.toml") << registry_->user_layer();
  }

  // The person's own policy layer: where moat looks by default, and named by the variable too.
  std::string user_policy_dir() const { return dir_.path() + "/config/moat/policy.d"; }
  // No system layer (a directory that does not exist), so /etc/moat cannot change the answer.
  std::string no_system_layer() const { return dir_.path() + "/no-system-layer"; }
  std::vector<std::string> env() const {
    return {"XDG_STATE_HOME=" + dir_.path() + "/state",
            "XDG_CONFIG_HOME=" + dir_.path() + "/config", "MOATD_BIN=" + moatd_bin(),
            "MOAT_POLICY_DIR=" + no_system_layer(), "MOAT_USER_POLICY_DIR=" + user_policy_dir()};
  }
  bool needs_network() const { return project_->needs == compat::Needs::kNpmRegistry; }
  std::string build_and_test() const { return commands_.build + " && " + commands_.test; }

  // The audit logs under `dir` hold records, and none of them a refusal or a question.
  AuditFindings expect_clean_audit(const std::string& dir) {
    AuditFindings f = audit_findings(dir);
    EXPECT_GT(f.logs, 0) << "no audit log under " << dir;
    EXPECT_GT(f.records, 0) << dir;
    std::string all;
    for (const std::string& r : f.refusals) all += "  " + r + "\n";
    EXPECT_TRUE(f.refusals.empty())
        << f.refusals.size() << " record(s) of " << f.records << " refused or asked:\n"
        << all;
    for (const std::string& r : f.flagged_records)
      std::cout << "[ " << project_->dir << " ] flagged: " << r << "\n";
    return f;
  }

  // A replay whose turns call bash with each of `commands` in turn, then answer.
  std::string replay_of(const std::vector<std::string>& commands) const {
    const std::string path = dir_.path() + "/replay.jsonl";
    std::ofstream out(path);
    for (const std::string& c : commands)
      out << json{{"text", "Running it."},
                  {"tool_calls",
                   json::array({{{"name", "bash"}, {"arguments", {{"command", c}}}}})}}
                 .dump()
          << "\n";
    out << json{{"text", "Built and tested."}}.dump() << "\n";
    return path;
  }

  std::vector<std::string> run_argv(const std::string& replay) const {
    return {moat_bin(),
            "run",
            "--model",
            "replay:" + replay,
            "-C",
            ws_,
            "--sessions-dir",
            dir_.path() + "/sessions",
            "--audit-dir",
            dir_.path() + "/audit",
            "--system-policy-dir",
            no_system_layer()};
  }

  void passes_under_sandbox_exec();
  void passes_under_run_headless();
  void passes_as_a_batch_check();

  TempDir dir_;
  const Project* project_ = nullptr;
  compat::Commands commands_;
  std::string ws_;
  std::unique_ptr<compat::NpmRegistry> registry_;
};

// `moat sandbox exec -C WS -- sh -c 'BUILD && TEST'`, as a person types it.
void CompatTest::passes_under_sandbox_exec() {
  std::vector<std::string> argv = {moat_bin(),
                                   "sandbox",
                                   "exec",
                                   "--system-policy-dir",
                                   no_system_layer(),
                                   "--audit-dir",
                                   dir_.path() + "/audit",
                                   "-C",
                                   ws_};
  if (needs_network()) argv.push_back("--network");
  argv.insert(argv.end(), {"--", "sh", "-c", build_and_test()});
  const e2e::Run r = run(argv, env(), 300);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find(project_->passed), std::string::npos) << "the tests did not run:\n" << r.out;
  expect_no_refusal_or_question(r.out, "moat sandbox exec's output");
  expect_clean_audit(dir_.path() + "/audit");
}

// `moat run --headless --json` on a replay: one turn builds, the next runs the tests.
void CompatTest::passes_under_run_headless() {
  std::vector<std::string> argv = run_argv(replay_of({commands_.build, commands_.test}));
  argv.insert(argv.end(), {"--headless", "--json", kTask});
  const SplitRun r = run_split(argv, env(), 300);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::vector<json> ends;
  std::istringstream events(r.out);
  for (std::string line; std::getline(events, line);) {
    json e = json::parse(line, nullptr, false);
    if (e.is_object() && e.value("type", "") == "tool_call_end") ends.push_back(std::move(e));
  }
  ASSERT_EQ(ends.size(), 2u) << "the build's and the tests' calls:\n" << r.out << r.err;
  for (const json& e : ends) {
    SCOPED_TRACE(e.dump());
    EXPECT_FALSE(e.value("is_error", true));
    EXPECT_EQ(e.value("exit_code", json()), 0);
    EXPECT_EQ(e.value("decision", ""), "allow");
    EXPECT_NE(e.value("decided_by", ""), "user");
    expect_no_refusal_or_question(e.value("output", ""), "the tool result");
  }
  EXPECT_NE(ends[1].value("output", "").find(project_->passed), std::string::npos)
      << "the tests did not run: " << ends[1].dump();
  expect_no_refusal_or_question(r.err, "moat run's stderr");
  EXPECT_EQ(expect_clean_audit(dir_.path() + "/audit").typed, 0)
      << "the model's lines are not typed";
}

// A one-item `moat batch` whose check is the README's build and tests; the agent only answers.
void CompatTest::passes_as_a_batch_check() {
  // A batch item is a repository (the node project's with its lockfile and .npmrc).
  if (!project_->is_repository) {
    ASSERT_TRUE(compat::make_repository(ws_)) << ws_;
  }
  replay_of({});  // the agent answers without a call: the check is what is tested
  std::ofstream(dir_.path() + "/batch.toml")
      << "task = \"" << kTask << "\"\nmodel = \"replay:replay.jsonl\"\ncheck = '''"
      << build_and_test() << "'''\n[[repo]]\npath = \"" << project_->dir << "\"\nid = \"item\"\n";
  const std::string out = dir_.path() + "/out";
  const e2e::Run r = run(
      {moat_bin(), "batch", dir_.path() + "/batch.toml", "--jobs", "1", "--out", out}, env(), 300);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  const json result = json::parse(read_file(out + "/results.jsonl"), nullptr, false);
  ASSERT_TRUE(result.is_object()) << read_file(out + "/results.jsonl") << r.out;
  const std::string check_log = read_file(out + "/items/item/check.log");
  EXPECT_EQ(result.value("status", ""), "passed") << result.dump() << "\ncheck.log:\n" << check_log;
  EXPECT_TRUE(result["check"].value("passed", false)) << result.dump();
  EXPECT_NE(check_log.find(project_->passed), std::string::npos) << "the tests did not run:\n"
                                                                 << check_log;
  expect_no_refusal_or_question(check_log, "the check's log");
  expect_no_refusal_or_question(read_file(out + "/items/item/run.log"), "the agent's log");
  expect_clean_audit(out + "/items/item/audit");
  expect_clean_audit(out + "/items/item/check-audit");
}

// One test per (project, way), named as the sentence it checks.
#define MOAT_COMPAT_TESTS(project)                                       \
  TEST_F(CompatTest, project##PassesUnderMoatSandboxExec) {              \
    set_up(compat::k##project);                                          \
    if (!IsSkipped() && !HasFatalFailure()) passes_under_sandbox_exec(); \
  }                                                                      \
  TEST_F(CompatTest, project##PassesUnderMoatRunHeadless) {              \
    set_up(compat::k##project);                                          \
    if (!IsSkipped() && !HasFatalFailure()) passes_under_run_headless(); \
  }                                                                      \
  TEST_F(CompatTest, project##PassesAsAMoatBatchCheck) {                 \
    set_up(compat::k##project);                                          \
    if (!IsSkipped() && !HasFatalFailure()) passes_as_a_batch_check();   \
  }

MOAT_COMPAT_TESTS(CWithMakeAndATestBinary)
MOAT_COMPAT_TESTS(CMakeWithCTest)
MOAT_COMPAT_TESTS(AutotoolsStyleConfigureAndMakeCheck)
MOAT_COMPAT_TESTS(PythonVenvWithALocalWheelAndPytest)
MOAT_COMPAT_TESTS(NodeWithNpmCiFromALocalRegistry)
MOAT_COMPAT_TESTS(GitCommitWithAnAuthor)

// At a terminal a person would be asked; the C project's session asks nothing, and its build
// and tests pass.
TEST_F(CompatTest, CWithMakeAndATestBinaryAsksNothingAtATerminal) {
  if (!Tmux::installed())
    GTEST_SKIP() << "tmux is not installed (it stands in for a person at a terminal)";
  set_up(compat::kCWithMakeAndATestBinary);
  if (IsSkipped() || HasFatalFailure()) return;
  std::string line = "env";
  for (const std::string& e : env()) line += " " + shell_quote(e);
  std::vector<std::string> argv = run_argv(replay_of({commands_.build, commands_.test}));
  argv.push_back(kTask);
  for (const std::string& a : argv) line += " " + shell_quote(a);
  line += "; echo EXIT=$?; sleep 60";
  Tmux t("moat-compat-" + std::to_string(getpid()));
  ASSERT_EQ(t.tmux("new-session -d -s t -x 150 -y 50 " + shell_quote(line)), 0);
  // moat waits at its prompt ("> " is the last line), or at a question.
  auto waiting = [&] {
    std::string pane = t.pane();
    if (shows_a_question(pane)) return true;
    while (!pane.empty() && (pane.back() == '\n' || pane.back() == ' ')) pane.pop_back();
    const std::size_t nl = pane.rfind('\n');
    return pane.substr(nl == std::string::npos ? 0 : nl + 1) == ">";
  };
  ASSERT_TRUE(eventually(waiting, std::chrono::seconds(120))) << t.pane();
  const std::string pane = t.pane();
  EXPECT_FALSE(shows_a_question(pane)) << "a question:\n" << pane;
  EXPECT_NE(pane.find("Built and tested."), std::string::npos) << pane;
  t.keys("/exit Enter");
  EXPECT_TRUE(t.shows("EXIT=0", 30)) << t.pane();
  expect_no_refusal_or_question(t.pane(), "the terminal");
  const AuditFindings f = expect_clean_audit(dir_.path() + "/audit");
  EXPECT_EQ(f.call_exits, (std::vector<json>{0, 0})) << "the build's and the tests' calls";
  EXPECT_TRUE(fs::exists(ws_ + "/test_greet")) << "the test binary was built";
}

}  // namespace
}  // namespace moat::e2e
