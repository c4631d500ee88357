// tests/unit/agent/batch/report_test.cc: report.html as headless Chromium builds it: totals,
// one row per item with failing items first, links to each item's patch and pages.
#include "agent/batch/report.h"

#include <gtest/gtest.h>

#include <regex>

#include "tests/unit/sessions/audit_page.h"
#include "tests/unit/sessions/temp_dir.h"

namespace moat::agent::batch {
namespace {

using nlohmann::json;
using sessions::testing::chromium_dom;
using sessions::testing::TempDir;

std::vector<ItemResult> sample_results() {
  const std::vector<json> lines = {
      {{"id", "svc-a"},
       {"status", "passed"},
       {"cost", 0.25},
       {"turns", 4},
       {"patch", "patches/svc-a.patch"},
       {"patchBytes", 481},
       {"session", "s1"},
       {"auditLog", "/x/a.jsonl"},
       {"check", {{"passed", true}, {"exit", 0}, {"auditLog", "/x/check.jsonl"}}}},
      {{"id", "svc-b"},
       {"status", "failed"},
       {"cost", 0.5},
       {"turns", 9},
       {"patch", "patches/svc-b.patch"},
       {"patchBytes", 12},
       {"reason", "the check failed"},
       {"check", {{"passed", false}, {"exit", 3}}}},
      {{"id", "<svc-c>"}, {"status", "error"}, {"reason", "work copy: git clone failed"}},
  };
  std::vector<ItemResult> out;
  for (const json& line : lines) out.push_back(item_result_from_json(line).value());
  return out;
}

// The rows' classes and first cells, in the order the DOM has them.
std::vector<std::pair<std::string, std::string>> rows_of(const std::string& dom) {
  std::vector<std::pair<std::string, std::string>> rows;
  const std::regex row(R"re(<tr class="([a-z]+)"><td class="id" data-sort="[^"]*">([^<]*)</td>)re");
  for (std::sregex_iterator it(dom.begin(), dom.end(), row), end; it != end; ++it)
    rows.emplace_back((*it)[1], (*it)[2]);
  return rows;
}

TEST(BatchReport, ChromiumShowsTotalsAndOneRowPerItemFailingFirst) {
  TempDir dir;
  const std::string file = dir.path() + "/report.html";
  std::ofstream(file) << report_html(sample_results(), {"svc-d"});
  std::string skipped;
  const std::string dom = chromium_dom(file, dir.path(), "", &skipped);
  if (!skipped.empty()) GTEST_SKIP() << skipped;
  ASSERT_NE(dom.find("</tbody>"), std::string::npos) << "Chromium gave no DOM:\n" << dom;
  const auto rows = rows_of(dom);
  const decltype(rows) expected = {
      {"error", "&lt;svc-c&gt;"}, {"missing", "svc-d"}, {"failed", "svc-b"}, {"passed", "svc-a"}};
  EXPECT_EQ(rows, expected) << dom;
  EXPECT_NE(dom.find("4 items: <b>1</b> passed, <b>2</b> failed, <b>1</b> missing; cost $0.7500"),
            std::string::npos)
      << dom;
  EXPECT_NE(dom.find("<a href=\"patches/svc-a.patch\">patch</a>"), std::string::npos);
  EXPECT_NE(dom.find("<a href=\"items/svc-a/session.html\">session</a>"), std::string::npos);
  EXPECT_NE(dom.find("<a href=\"items/svc-a/audit.html\">audit</a>"), std::string::npos);
  // The check ran under its own moatd: its audit log is linked too (svc-b's check has none).
  EXPECT_NE(dom.find("<a href=\"items/svc-a/check-audit.html\">check audit</a>"), std::string::npos)
      << dom;
  EXPECT_EQ(dom.find("items/svc-b/check-audit.html"), std::string::npos) << dom;
  EXPECT_NE(dom.find("failed (exit 3)"), std::string::npos);
  // The id is text, never markup.
  EXPECT_EQ(dom.find("<svc-c>"), std::string::npos);
}

TEST(BatchReport, EveryColumnHeaderSortsTheTable) {
  // The page's script sorts by data-sort on a header click; Chromium runs it when the fragment
  // asks for a column, as a reader's click would.
  TempDir dir;
  const std::string file = dir.path() + "/report.html";
  std::ofstream(file) << report_html(sample_results(), {});
  std::string skipped;
  const std::string dom = chromium_dom(file, dir.path(), "sort=cost", &skipped);
  if (!skipped.empty()) GTEST_SKIP() << skipped;
  const auto rows = rows_of(dom);
  ASSERT_EQ(rows.size(), 3u) << dom;
  EXPECT_EQ(rows[0].second, "&lt;svc-c&gt;");  // $0
  EXPECT_EQ(rows[1].second, "svc-a");          // $0.25
  EXPECT_EQ(rows[2].second, "svc-b");          // $0.50
}

}  // namespace
}  // namespace moat::agent::batch
