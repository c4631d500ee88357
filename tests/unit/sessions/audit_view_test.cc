// tests/unit/sessions/audit_view_test.cc: grouping audit records by tool call, execs as a tree.
#include "sessions/audit_view.h"

#include <gtest/gtest.h>

#include "sessions/render_audit.h"
#include "tests/unit/sessions/audit_fixture.h"
#include "tests/unit/sessions/temp_dir.h"

namespace moat::sessions {
namespace {

using nlohmann::json;
using testing::TempDir;

std::vector<json> fixture_records(const TempDir& dir) {
  const std::string path = testing::write_fixture_audit(dir.path());
  EXPECT_FALSE(path.empty());
  auto records = load_audit_records(path);
  EXPECT_TRUE(records.has_value());
  return records ? *records : std::vector<json>{};
}

TEST(AuditView, GroupsACallsDecisionProgramsAndEndsIntoATree) {
  TempDir dir;
  const std::vector<json> records = fixture_records(dir);
  const AuditView view(records);
  ASSERT_EQ(view.calls().size(), 3u);
  const CallView& bash = view.calls()[0];
  ASSERT_NE(bash.call, nullptr);
  ASSERT_NE(bash.decision, nullptr);
  EXPECT_EQ((*bash.decision)["decision_id"], "d1");
  ASSERT_EQ(bash.execs.size(), 4u);
  EXPECT_EQ(bash.roots, std::vector<size_t>{0});
  EXPECT_EQ(bash.execs[0].children, std::vector<size_t>{1});
  EXPECT_EQ(bash.execs[1].children, (std::vector<size_t>{2, 3}));
  ASSERT_NE(bash.execs[1].end, nullptr);
  EXPECT_EQ((*bash.execs[1].end)["exit"]["code"], 1);
  EXPECT_EQ(bash.execs[2].end, nullptr);  // the refused curl never ran
  EXPECT_EQ(view.call_of(*bash.execs[3].exec), &bash);
  // The refused call has its decision and nothing else.
  EXPECT_EQ(view.calls()[2].call, nullptr);
  ASSERT_EQ(view.calls()[2].decisions.size(), 1u);
  EXPECT_EQ((*view.calls()[2].decisions[0])["result"], "deny");
}

// Logs written before issue 14 have one "exec" per call with a "processes" array.
TEST(AuditView, AnOldPerCallExecRecordListsItsProcessesAsPrograms) {
  const std::vector<json> records = {
      {{"type", "decision"}, {"decision_id", "d1"}, {"call_id", "c1"}, {"result", "allow"}},
      {{"type", "exec"},
       {"decision_id", "d1"},
       {"call_id", "c1"},
       {"tool", "bash"},
       {"processes",
        {{{"argv", {"bash", "-c", "ls"}}, {"exit", {{"code", 0}}}},
         {{"argv", {"rg", "x"}}, {"exit", {{"code", 1}}}}}}}};
  const AuditView view(records);
  ASSERT_EQ(view.calls().size(), 1u);
  EXPECT_EQ(view.calls()[0].call, &records[1]);
  EXPECT_EQ(view.calls()[0].decision, &records[0]);
  EXPECT_EQ(view.calls()[0].roots, (std::vector<size_t>{0, 1}));
}

TEST(AuditView, ACallIdUsedAgainAfterItsCallEndedIsAnotherCall) {
  const std::vector<json> records = {
      {{"type", "call"}, {"call_id", "c1"}},
      {{"type", "exec"}, {"call_id", "c1"}, {"exec_id", "e1"}},
      {{"type", "call"}, {"call_id", "c1"}},
  };
  const AuditView view(records);
  ASSERT_EQ(view.calls().size(), 2u);
  EXPECT_TRUE(view.calls()[0].execs.empty());
  EXPECT_EQ(view.calls()[1].execs.size(), 1u);
}

// Whatever parent_exec a record names, the drawing cannot loop: only an earlier exec of the
// same call is a parent.
TEST(AuditView, OnlyAnEarlierExecOfTheSameCallIsAParent) {
  const std::vector<json> records = {
      {{"type", "exec"}, {"call_id", "c1"}, {"exec_id", "a"}, {"parent_exec", "b"}},
      {{"type", "exec"}, {"call_id", "c1"}, {"exec_id", "b"}, {"parent_exec", "a"}},
      {{"type", "exec"}, {"call_id", "c1"}, {"exec_id", "c"}, {"parent_exec", "c"}},
      {{"type", "exec"}, {"call_id", "c2"}, {"exec_id", "d"}, {"parent_exec", "a"}},
  };
  const AuditView view(records);
  ASSERT_EQ(view.calls().size(), 2u);
  EXPECT_EQ(view.calls()[0].roots, (std::vector<size_t>{0, 2}));
  EXPECT_EQ(view.calls()[0].execs[0].children, std::vector<size_t>{1});
  EXPECT_EQ(view.calls()[1].roots, std::vector<size_t>{0});
}

}  // namespace
}  // namespace moat::sessions
