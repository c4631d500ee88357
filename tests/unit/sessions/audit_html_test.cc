// tests/unit/sessions/audit_html_test.cc: the audit page: header, calls with their exec tree
// and files, filters; and the page as headless Chromium renders it.
#include <gtest/gtest.h>

#include "sessions/render_audit.h"
#include "tests/unit/sessions/audit_fixture.h"
#include "tests/unit/sessions/audit_page.h"
#include "tests/unit/sessions/temp_dir.h"

namespace moat::sessions {
namespace {

using testing::TempDir;

std::string fixture_page(const TempDir& dir) {
  const std::string log = testing::write_fixture_audit(dir.path() + "/audit");
  auto records = load_audit_records(log);
  auto verdict = verify_audit_file(log);
  EXPECT_TRUE(records && verdict && verdict->ok());
  return records && verdict ? audit_html(*records, *verdict, log) : "";
}

TEST(AuditHtml, HeaderShowsPolicyLayersSandboxLayersAndSigningKey) {
  TempDir dir;
  const std::string html = fixture_page(dir);
  EXPECT_NE(html.find("<td><code>org</code></td><td><code>acme</code></td><td><code>7</code></td>"
                      "<td><code>/etc/moat/org.toml</code></td><td><code>ab12</code></td>"),
            std::string::npos)
      << html;
  EXPECT_NE(html.find("<tr><th>seccomp</th><td><code>filter</code></td></tr>"), std::string::npos);
  EXPECT_NE(html.find("<p id=\"signing-key\"><code>ed25519:"), std::string::npos);
}

TEST(AuditHtml, EachCallShowsWhoDecidedRefusedProgramsAndFileSizes) {
  TempDir dir;
  const std::string html = fixture_page(dir);
  EXPECT_NE(html.find("<b>allow</b> <span class=\"who\">allowed by the user, once, after 4.5 s, "
                      "rule org.ask-tests</span> &middot; exit 1, 47 ms"),
            std::string::npos)
      << html;
  EXPECT_NE(html.find("<li class=\"exec deny\" data-program=\"curl\"><span class=\"prog\">curl "
                      "x.example  REFUSED (policy, rule org.no-curl): no network tools</span>"),
            std::string::npos)
      << html;
  EXPECT_NE(html.find("<tr class=\"file\"><td>modify</td><td><code>/w/a.txt</code></td><td>10 B"),
            std::string::npos)
      << html;
  EXPECT_NE(html.find("<td>+4</td>"), std::string::npos);
  // The refused call ran nothing, and says so.
  EXPECT_NE(html.find("<b>deny</b> <span class=\"who\">denied by policy, rule org.no-force-push"
                      "</span> &middot; did not run"),
            std::string::npos)
      << html;
}

TEST(AuditHtml, ThePageLoadsNothingFromOutside) {
  TempDir dir;
  const std::string html = fixture_page(dir);
  EXPECT_NE(html.find("content=\"default-src 'none';"), std::string::npos);
  EXPECT_EQ(html.find(" src="), std::string::npos);
  EXPECT_EQ(html.find(" href="), std::string::npos);
}

// A log written before issue 14: one "exec" per call naming only its tool and processes.
TEST(AuditHtml, AnOldLogsCallIsHeadedByItsDecisionAndListsItsProcesses) {
  using nlohmann::json;
  const std::vector<json> records = {
      {{"seq", 1},
       {"type", "decision"},
       {"decision_id", "d1"},
       {"call_id", "c1"},
       {"tool", "bash"},
       {"result", "allow"},
       {"input", {{"command", "make -j2"}}}},
      {{"seq", 2},
       {"type", "exec"},
       {"decision_id", "d1"},
       {"call_id", "c1"},
       {"tool", "bash"},
       {"files_changed", json::array()},
       {"processes",
        {{{"argv", {"bash", "-c", "make -j2"}}, {"exit", {{"code", 2}}}, {"duration_ms", 9}}}}}};
  AuditVerdict ok;
  ok.records = 2;
  const std::string html = audit_html(records, ok, "old.jsonl");
  EXPECT_NE(html.find("<h3>bash make -j2</h3>"), std::string::npos) << html;
  EXPECT_NE(html.find("<span class=\"prog\">bash -c &#39;make -j2&#39;  exit 2, 9 ms</span>"),
            std::string::npos)
      << html;
  EXPECT_EQ(html.find("<th>op</th>"), std::string::npos) << "no files, no empty table";
}

// The DOM after the page's script ran: the exec tree nests bash > sh > curl, the file list is
// there, and the #program=curl filter leaves only the call that started curl (and curl's row).
TEST(AuditHtml, HeadlessChromiumShowsTheTreeTheFilesAndFilters) {
  TempDir dir;
  const std::string log = testing::write_fixture_audit(dir.path() + "/audit");
  const testing::AuditPage page = testing::audit_page_dom(log, dir.path(), "program=curl");
  if (!page.skipped.empty()) GTEST_SKIP() << page.skipped;
  ASSERT_FALSE(page.dom.empty()) << "chromium printed no DOM";
  const std::string& dom = page.dom;
  const size_t bash = dom.find("data-program=\"bash\"");
  const size_t sh =
      dom.find("<ul class=\"tree\"><li class=\"exec allow\" data-program=\"sh\">", bash);
  const size_t curl =
      dom.find("<ul class=\"tree\"><li class=\"exec deny\" data-program=\"curl\">", sh);
  EXPECT_NE(bash, std::string::npos) << dom;
  EXPECT_NE(sh, std::string::npos) << dom;
  EXPECT_NE(curl, std::string::npos) << dom;
  EXPECT_NE(dom.find("<code>/w/a.txt</code>"), std::string::npos) << dom;
  EXPECT_NE(dom.find("<code>/w/b.txt</code>"), std::string::npos) << dom;
  EXPECT_NE(dom.find("<span id=\"shown\">2 of "), std::string::npos) << dom;
  EXPECT_NE(dom.find("id=\"call-1\" data-type=\"call\" data-decision=\"allow\" data-programs=\"\" "
                     "style=\"display: none;\""),
            std::string::npos)
      << dom;
  EXPECT_EQ(
      dom.find("id=\"call-0\" data-type=\"call\" data-decision=\"allow\" data-programs=\"bash "
               "sh curl cp\" style=\"display: none;\""),
      std::string::npos)
      << dom;
}

}  // namespace
}  // namespace moat::sessions
