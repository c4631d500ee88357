// tests/unit/sessions/audit_record_text_test.cc: every audit record type docs/sessions.md lists
// has a complete line in `moat audit show` (and --tree) and a complete row in the HTML page as
// headless Chromium renders it; a call's card lists its connections (issue 27 item 9).
#include "sessions/audit_record_text.h"

#include <gtest/gtest.h>

#include <set>

#include "sessions/render_audit.h"
#include "tests/unit/sessions/audit_page.h"
#include "tests/unit/sessions/audit_samples.h"
#include "tests/unit/sessions/temp_dir.h"

namespace moat::sessions {
namespace {

using testing::RecordSample;
using testing::TempDir;

std::vector<nlohmann::json> sample_records(const TempDir& dir) {
  auto records = load_audit_records(testing::write_sample_audit(dir.path()));
  EXPECT_TRUE(records.has_value());
  if (!records) return {};
  EXPECT_EQ(records->size(), testing::record_samples().size());
  return *records;
}

// A new record type is documented, rendered and sampled together: the page and `show` below
// are checked over the samples, so a type with none would go unchecked.
TEST(AuditRecordText, EveryTypeDocumentedInSessionsMdHasARendererAndASample) {
  const std::vector<std::string> types = testing::documented_record_types();
  ASSERT_GE(types.size(), 9u) << "docs/sessions.md lost its \"Record types\" paragraph";
  std::set<std::string> sampled;
  for (const RecordSample& s : testing::record_samples()) sampled.insert(s.type);
  for (const std::string& t : types) {
    EXPECT_TRUE(has_record_text(t)) << t << ": no renderer in sessions/audit_record_text.cc";
    EXPECT_EQ(sampled.count(t), 1u) << t << ": no sample in tests/unit/sessions/audit_samples.h";
  }
}

TEST(AuditRecordText, EachTypesShowLineHoldsEveryFieldOfItsRecord) {
  TempDir dir;
  const std::vector<nlohmann::json> records = sample_records(dir);
  const AuditView view(records);
  const std::vector<RecordSample> samples = testing::record_samples();
  for (size_t i = 0; i < records.size() && i < samples.size(); ++i) {
    const std::string line = audit_line(records[i], &view);
    for (const std::string& want : samples[i].shows)
      EXPECT_NE(line.find(want), std::string::npos) << samples[i].type << ": " << want << "\n"
                                                    << line;
  }
}

// --tree draws a program under its call; every other record keeps its complete row.
TEST(AuditRecordText, TreeModeRowsHoldEveryFieldOfEveryRecordNotDrawnInTheTree) {
  TempDir dir;
  const std::vector<nlohmann::json> records = sample_records(dir);
  AuditShowOptions o;
  o.tree = true;
  std::string out;
  for (const AuditRow& row : audit_rows(records, records.size(), o)) out += row.text + "\n";
  for (const RecordSample& s : testing::record_samples()) {
    if (s.type == "exec" || s.type == "exec.end") continue;
    for (const std::string& want : s.shows)
      EXPECT_NE(out.find(want), std::string::npos) << s.type << ": " << want << "\n" << out;
  }
}

// What Chromium's --dump-dom writes for text: & < > as entities.
std::string dom_text(const std::string& s) {
  std::string out;
  for (char c : s)
    out += c == '&' ? "&amp;" : c == '<' ? "&lt;" : c == '>' ? "&gt;" : std::string(1, c);
  return out;
}

TEST(AuditRecordPage, HeadlessChromiumShowsEveryRecordOfEveryTypeComplete) {
  TempDir dir;
  const std::string log = testing::write_sample_audit(dir.path() + "/audit");
  const testing::AuditPage page = testing::audit_page_dom(log, dir.path());
  if (!page.skipped.empty()) GTEST_SKIP() << page.skipped;
  ASSERT_FALSE(page.dom.empty()) << "chromium printed no DOM";
  const size_t timeline = page.dom.find("<table id=\"timeline\">");
  ASSERT_NE(timeline, std::string::npos) << page.dom;
  for (const RecordSample& s : testing::record_samples()) {
    const std::string row = "<td>" + dom_text(s.type) + "</td><td><code>";
    EXPECT_NE(page.dom.find(row, timeline), std::string::npos) << s.type;
    for (const std::string& want : s.shows)
      EXPECT_NE(page.dom.find(dom_text(want), timeline), std::string::npos)
          << s.type << ": " << want << "\n" << page.dom.substr(timeline);
  }
}

TEST(AuditRecordPage, ACallsCardListsItsConnectionsAndTheHeaderWhoRanItWhere) {
  TempDir dir;
  const std::string log = testing::write_sample_audit(dir.path() + "/audit");
  const testing::AuditPage page = testing::audit_page_dom(log, dir.path());
  if (!page.skipped.empty()) GTEST_SKIP() << page.skipped;
  const std::string& dom = page.dom;
  const size_t card = dom.find("id=\"call-0\"");
  ASSERT_NE(card, std::string::npos) << dom;
  const std::string card_html = dom.substr(card, dom.find("</div>", card) - card);
  EXPECT_NE(card_html.find("<li class=\"net allow\"><code>CONNECT pypi.org:443 -&gt; "
                           "151.101.0.223  allow (org.pypi (system layer)"),
            std::string::npos)
      << card_html;
  EXPECT_NE(card_html.find("<li class=\"net deny\"><code>GET evil.example:80"), std::string::npos)
      << card_html;
  EXPECT_NE(dom.find("<p id=\"session-start\"><code>moat 0.1.0 /w  user alice (uid 1000, gid "
                     "1001), pid 4242 on host build-7"),
            std::string::npos)
      << dom;
}

}  // namespace
}  // namespace moat::sessions
