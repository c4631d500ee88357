// tests/unit/sessions/render_test.cc: text and HTML views of sessions and audit logs.
#include "sessions/render_audit.h"
#include "sessions/render_session.h"

#include <gtest/gtest.h>

#include "sessions/json_util.h"
#include "temp_dir.h"
#include "tests/unit/sessions/audit_fixture.h"

namespace moat::sessions {
namespace {

using nlohmann::json;
using testing::TempDir;

Entry msg(const std::string& role, const std::string& text) {
  return {{"type", "message"},
          {"message", {{"role", role}, {"content", {{{"type", "text"}, {"text", text}}}}}}};
}

TEST(RenderSession, EntrySummaryEscapesControlCharacters) {
  const std::string s = entry_summary(msg("user", "red \x1b[31m\nnext"));
  EXPECT_EQ(s.find('\x1b'), std::string::npos);
  EXPECT_EQ(s.find('\n'), std::string::npos);
  EXPECT_NE(s.find("\\x1b"), std::string::npos);
}

TEST(RenderSession, HtmlEscapesModelAndRepositoryText) {
  TempDir dir;
  auto s = SessionStore::create(dir.path(), "/w<x>");
  ASSERT_TRUE(s);
  ASSERT_TRUE((*s)->append(msg("assistant", "<script>alert(1)</script>")));
  const std::string html = session_html(**s, (*s)->path_to_leaf());
  EXPECT_EQ(html.find("<script>"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;"), std::string::npos);
  EXPECT_NE(html.find("/w&lt;x&gt;"), std::string::npos);
}

TEST(RenderSession, TreeIndentsOnlyAtForksAndMarksTheLeafAndThePathToIt) {
  TempDir dir;
  auto s = SessionStore::create(dir.path(), "/w");
  ASSERT_TRUE(s);
  auto a = (*s)->append(msg("user", "root"));
  auto b = (*s)->append(msg("assistant", "first"));
  ASSERT_TRUE((*s)->set_leaf(*a));
  auto c = (*s)->append(msg("assistant", "second"));
  auto d = (*s)->append(msg("user", "more"));
  ASSERT_TRUE(a && b && c && d);
  const std::string tree = render_tree(**s);
  EXPECT_NE(tree.find("\n* " + *a + "  user: root\n"), std::string::npos) << tree;
  EXPECT_NE(tree.find("\n  ├─ " + *b), std::string::npos) << "off the path:\n" << tree;
  EXPECT_NE(tree.find("\n* └─ " + *c), std::string::npos) << "on the path:\n" << tree;
  EXPECT_NE(tree.find("\n*    " + *d + "  user: more  <- leaf"), std::string::npos) << tree;
}

TEST(RenderSession, LongChainRendersWithoutDrifting) {
  TempDir dir;
  auto s = SessionStore::create(dir.path(), "/w");
  ASSERT_TRUE(s);
  for (int i = 0; i < 3000; ++i) ASSERT_TRUE((*s)->append(msg("user", "n")));
  const std::string tree = render_tree(**s);
  EXPECT_EQ(tree.find("\n* "), tree.find('\n')) << "every entry on the path";
  EXPECT_EQ(tree.find("\n*  "), std::string::npos);  // no line is indented
}

TEST(RenderAudit, FilterMatchesSessionPrefixTypeAndDecisionResult) {
  const json deny = {{"type", "decision"}, {"session", "0190abc"}, {"result", "deny"}};
  const json exec = {{"type", "exec"}, {"session", "0190abc"}};
  EXPECT_TRUE(audit_matches(deny, {"0190", "", ""}));
  EXPECT_FALSE(audit_matches(deny, {"0191", "", ""}));
  EXPECT_TRUE(audit_matches(deny, {"", "decision", "deny"}));
  EXPECT_FALSE(audit_matches(deny, {"", "", "allow"}));
  EXPECT_FALSE(audit_matches(exec, {"", "", "deny"}));
  EXPECT_TRUE(audit_matches(exec, {"", "exec", ""}));
}

TEST(RenderAudit, ExecLineShowsArgvExitDurationAndFilesInBothShapes) {
  const json flat = {{"seq", 4},
                     {"type", "exec"},
                     {"argv", {"make", "-j2"}},
                     {"exitCode", 2},
                     {"duration_ms", 1500},
                     {"filesMutated", {{{"path", "out.o"}, {"op", "create"}}}}};
  const std::string line = audit_line(flat);
  EXPECT_NE(line.find("make -j2"), std::string::npos) << line;
  EXPECT_NE(line.find("exit 2, 1500 ms"), std::string::npos) << line;
  EXPECT_NE(line.find("wrote out.o (create)"), std::string::npos) << line;
  const json nested = {{"seq", 5},
                       {"type", "exec"},
                       {"argv", {"sleep", "99"}},
                       {"exit", {{"code", nullptr}, {"signal", "SIGKILL"}, {"limit", "wall_time"}}},
                       {"files_mutated", {"a.txt"}}};
  const std::string l2 = audit_line(nested);
  EXPECT_NE(l2.find("signal SIGKILL, killed by wall_time limit"), std::string::npos) << l2;
  EXPECT_EQ(files_touched(nested), std::vector<std::string>{"a.txt"});
}

TEST(RenderAudit, HtmlHeadsWithTheVerdictAndEscapesRecords) {
  const std::vector<json> records = {{{"seq", 1},
                                      {"type", "decision"},
                                      {"session", "s"},
                                      {"result", "deny"},
                                      {"input", {{"argv", {"echo", "<img src=x>"}}}},
                                      {"deciding_rule", {{"id", "org.x"}}}}};
  AuditVerdict broken_v;
  broken_v.problem = AuditProblem::kMissing;
  broken_v.seq = 2;
  broken_v.offset = 99;
  const std::string html = audit_html(records, broken_v, "f.jsonl");
  EXPECT_NE(html.find("Chain BROKEN (missing) at seq 2, byte 99"), std::string::npos);
  EXPECT_EQ(html.find("<img"), std::string::npos);
  EXPECT_NE(html.find("deny: 1"), std::string::npos);
  AuditVerdict ok_v;
  ok_v.records = 1;
  EXPECT_NE(audit_html(records, ok_v, "f").find("Chain verified: 1 records"), std::string::npos);
}

std::vector<json> fixture(const TempDir& dir) {
  auto records = load_audit_records(testing::write_fixture_audit(dir.path()));
  EXPECT_TRUE(records.has_value());
  return records ? *records : std::vector<json>{};
}

std::string all_rows(const std::vector<AuditRow>& rows) {
  std::string out;
  for (const auto& r : rows) out += r.text + "\n";
  return out;
}

TEST(RenderAudit, ShowRowsNameTheCommandExitCodeRuleAndWhoDecided) {
  TempDir dir;
  const std::vector<json> records = fixture(dir);
  const std::string out = all_rows(audit_rows(records, records.size(), {}));
  EXPECT_NE(out.find(" call           bash sh run_tests.sh  exit 1, 47 ms, 4 programs (1 refused), "
                     "120 bytes out  (org.ask-tests; allowed by the user, once, after 4.5 s)"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("      wrote modify /w/a.txt  10 -> 14 bytes (+4)"), std::string::npos) << out;
  EXPECT_NE(out.find(" exec           curl x.example  REFUSED (policy, rule org.no-curl): no "
                     "network tools"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find(" exec.end       sh run_tests.sh  exit 1, 38 ms"), std::string::npos) << out;
  EXPECT_NE(
      out.find(" call           write /w/notes.md  ok, 1 ms  (default.ws; allowed by policy)"),
      std::string::npos)
      << out;
  EXPECT_NE(out.find("deny  bash git push -f  (org.no-force-push; denied by policy)"),
            std::string::npos)
      << out;
  EXPECT_EQ(out.find("[unverified]"), std::string::npos) << out;
}

TEST(RenderAudit, TreeModeDrawsProgramsUnderTheirCallInsteadOfAsRows) {
  TempDir dir;
  const std::vector<json> records = fixture(dir);
  AuditShowOptions o;
  o.tree = true;
  const std::string out = all_rows(audit_rows(records, records.size(), o));
  EXPECT_EQ(out.find(" exec "), std::string::npos) << out;
  EXPECT_EQ(out.find(" exec.end "), std::string::npos) << out;
  EXPECT_NE(out.find("(1 refused), 120 bytes out  (org.ask-tests; allowed by the user, once, after "
                     "4.5 s)\n"
                     "      wrote create /w/b.txt  14 bytes\n"
                     "      wrote modify /w/a.txt  10 -> 14 bytes (+4)\n"
                     "        bash -c 'sh run_tests.sh'  allowed (call)  exit 1, 40 ms\n"
                     "        `- sh run_tests.sh  allowed (observed)  exit 1, 38 ms\n"
                     "           |- curl x.example  REFUSED (policy, rule org.no-curl): no network "
                     "tools\n"
                     "           `- cp a.txt b.txt  allowed (observed)  exit 0, 2 ms\n"),
            std::string::npos)
      << out;
}

TEST(RenderAudit, JsonModePrintsTheRecordsThemselves) {
  TempDir dir;
  const std::vector<json> records = fixture(dir);
  AuditShowOptions o;
  o.json = true;
  o.filter.type = "exec";
  const std::vector<AuditRow> rows = audit_rows(records, 3, o);  // unverified: not marked
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(parse_json(rows[2].text), records[4]);
  EXPECT_EQ(rows[2].ts, records[4]["ts"]);
}

TEST(RenderAudit, RowsFromTheBreakOnAreMarkedUnverifiedAndSessionsNamed) {
  TempDir dir;
  const std::vector<json> records = fixture(dir);
  AuditShowOptions o;
  o.session_column = true;
  o.tree = true;
  const std::vector<AuditRow> rows = audit_rows(records, 2, o);
  ASSERT_GE(rows.size(), 3u);
  EXPECT_EQ(rows[1].text.find("[unverified]"), std::string::npos) << rows[1].text;
  EXPECT_NE(rows[2].text.find("[unverified]"), std::string::npos) << rows[2].text;
  EXPECT_EQ(rows[0].text.rfind("01900000-0000-7000-8000-0000000000aa     1 ", 0), 0u)
      << rows[0].text;
}

}  // namespace
}  // namespace moat::sessions
