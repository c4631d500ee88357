// tests/unit/sessions/audit_text_test.cc: audit records and programs in a person's words.
#include "sessions/audit_text.h"

#include <gtest/gtest.h>

#include "sessions/render_audit.h"
#include "tests/unit/sessions/audit_fixture.h"
#include "tests/unit/sessions/temp_dir.h"

namespace moat::sessions {
namespace {

using nlohmann::json;

json user_decision(json user) {
  return {{"type", "decision"},
          {"result", "allow"},
          {"decided_by", "user"},
          {"input", {{"command", "make"}, {"user", std::move(user)}}}};
}

// sandbox/ask_broker.cc stores the answer as input.user {answer, scope, channel, latency_ms}.
TEST(AuditText, APersonsAnswerReadsAsSuch) {
  EXPECT_EQ(
      decided_text(user_decision(
          {{"answer", "allow"}, {"scope", "once"}, {"channel", "console"}, {"latency_ms", 4500}})),
      "allowed by the user, once, after 4.5 s");
  EXPECT_EQ(
      decided_text(user_decision({{"answer", "deny"}, {"scope", "once"}, {"latency_ms", 800}})),
      "denied by the user, once, after 0.8 s");
  EXPECT_EQ(
      decided_text(user_decision(
          {{"answer", "allow"}, {"scope", "session"}, {"remembered", true}, {"latency_ms", 0}})),
      "allowed by the user (remembered for this session)");
  EXPECT_EQ(decided_text({{"result", "deny"}, {"decided_by", "policy"}}), "denied by policy");
  EXPECT_EQ(decided_text({{"result", "allow"}, {"decided_by", "default"}}), "allowed by default");
  EXPECT_EQ(decided_text({{"result", "deny"}}), "");
}

TEST(AuditText, ExecTreeDrawsEachProgramUnderItsParentWithDecisionAndExit) {
  testing::TempDir dir;
  auto records = load_audit_records(testing::write_fixture_audit(dir.path()));
  ASSERT_TRUE(records.has_value());
  const AuditView view(*records);
  const std::vector<std::string> lines = exec_tree_lines(view.calls()[0], "> ");
  const std::vector<std::string> want = {
      "> bash -c 'sh run_tests.sh'  allowed (call)  exit 1, 40 ms",
      "> `- sh run_tests.sh  allowed (observed)  exit 1, 38 ms",
      ">    |- curl x.example  REFUSED (policy, rule org.no-curl): no network tools",
      ">    `- cp a.txt b.txt  allowed (observed)  exit 0, 2 ms",
  };
  EXPECT_EQ(lines, want);
}

TEST(AuditText, FilesChangedShowTheirOperationAndSizes) {
  const json call = {{"files_changed",
                      {testing::fixture_file("/w/a", "modify", 10, 4),
                       testing::fixture_file("/w/n", "create", -1, 5),
                       testing::fixture_file("/w/d", "delete", 7, -1),
                       {{"path", "/w/new"},
                        {"op", "rename"},
                        {"from", "/w/old"},
                        {"before", nullptr},
                        {"after", nullptr}}}},
                     {"files_changed_truncated", true}};
  const std::vector<std::string> want = {"modify /w/a  10 -> 4 bytes (-6)", "create /w/n  5 bytes",
                                         "delete /w/d  was 7 bytes", "rename /w/old -> /w/new",
                                         "... (the list was capped)"};
  EXPECT_EQ(files_touched(call), want);
}

// An edit call's record holds the edit tool's filesMutated (tools/edit.cc) and the workspace
// diff's files_changed (sandbox/call_gate.cc record_call): its one write is listed once.
TEST(AuditText, AnEditsWriteIsListedOnce) {
  const json edit = {{"type", "call"},
                     {"tool", "edit"},
                     {"path", "/w/a.txt"},
                     {"filesMutated", {"/w/a.txt"}},
                     {"files_changed", {testing::fixture_file("/w/a.txt", "modify", 10, 14)}},
                     {"files_changed_truncated", false}};
  EXPECT_EQ(files_touched(edit),
            std::vector<std::string>{"modify /w/a.txt  10 -> 14 bytes (+4)"});
  const std::string line = audit_line(edit);
  EXPECT_EQ(line.find("/w/a.txt", line.find("/w/a.txt", line.find("wrote")) + 1),
            std::string::npos)
      << line;
}

TEST(AuditText, ExitTextReadsTheCallRecordsFlatExitCodeAndSignal) {
  EXPECT_EQ(exit_text({{"exit_code", 2}, {"signal", nullptr}}), "exit 2");
  EXPECT_EQ(exit_text({{"exit_code", nullptr}, {"signal", 9}}), "signal 9");
  EXPECT_EQ(exit_text({{"exit_code", nullptr}, {"signal", nullptr}, {"is_error", false}}), "ok");
}

}  // namespace
}  // namespace moat::sessions
