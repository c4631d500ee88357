// tests/unit/agent/batch/results_test.cc: results.jsonl survives a crash at any byte.
#include "agent/batch/results.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include "tests/unit/sessions/temp_dir.h"

namespace moat::agent::batch {
namespace {

using sessions::testing::slurp;
using sessions::testing::TempDir;

TEST(BatchResults, AnyTruncationKeepsEveryWholeLineBeforeIt) {
  const std::string file = "{\"id\":\"a\",\"status\":\"passed\"}\n{\"id\":\"b\"}\n{\"id\":\"c\"}\n";
  for (std::size_t cut = 0; cut <= file.size(); ++cut) {
    SCOPED_TRACE("cut at byte " + std::to_string(cut));
    const auto lines = parse_results(file.substr(0, cut));
    EXPECT_EQ(lines.size(),
              static_cast<std::size_t>(std::count(file.begin(), file.begin() + cut, '\n')));
  }
}

TEST(BatchResults, OpeningCutsATornLastLineSoTheNextAppendStandsAlone) {
  TempDir dir;
  std::ofstream(dir.path() + "/results.jsonl") << "{\"id\":\"a\"}\n{\"id\":\"b\",\"sta";
  {
    auto log = ResultsLog::open(dir.path());
    ASSERT_TRUE(log) << log.error().message();
    ASSERT_TRUE((*log)->append({{"id", "c"}}));
  }
  EXPECT_EQ(slurp(dir.path() + "/results.jsonl"), "{\"id\":\"a\"}\n{\"id\":\"c\"}\n");
  auto read = read_results(dir.path() + "/results.jsonl");
  ASSERT_TRUE(read);
  EXPECT_EQ(finished_ids(*read), (std::set<std::string>{"a", "c"}));
}

TEST(BatchResults, AMissingFileHasNoResults) {
  TempDir dir;
  auto read = read_results(dir.path() + "/results.jsonl");
  ASSERT_TRUE(read);
  EXPECT_TRUE(read->empty());
}

TEST(BatchResults, ADurableFileIsWholeAndLeavesNoTemporary) {
  TempDir dir;
  ASSERT_TRUE(write_file_durably(dir.path() + "/p.patch", "diff --git a/x b/x\n"));
  EXPECT_EQ(slurp(dir.path() + "/p.patch"), "diff --git a/x b/x\n");
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/p.patch.tmp"));
}

TEST(BatchResults, ALineWhoseFieldsHaveOtherTypesThanMoatWritesIsSkipped) {
  const auto lines = parse_results(
      "{\"id\":\"a\",\"cost\":0.5,\"check\":{\"passed\":true,\"exit\":0}}\n"
      "{\"id\":\"b\",\"cost\":\"lots\"}\n"
      "{\"id\":\"c\",\"check\":{\"passed\":\"yes\"}}\n"
      "{\"id\":\"d\",\"status\":1}\n"
      "{\"id\":7}\n");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["id"], "a");
  const auto typed = parse_item_results(
      "{\"id\":\"a\",\"cost\":0.5,\"check\":{\"passed\":true,\"exit\":0}}\n"
      "{\"id\":\"b\",\"cost\":\"lots\"}\n");
  ASSERT_EQ(typed.size(), 1u);
  EXPECT_EQ(typed[0].cost, 0.5);
  EXPECT_FALSE(typed[0].turns);
  EXPECT_TRUE(check_passed(typed[0]));
}

TEST(BatchResults, ALineTheItemDecoderRefusesIsSkippedToo) {
  const auto lines = parse_results(
      "{\"id\":\"a\",\"exit\":0,\"agent\":{\"exit\":0,\"seconds\":1.5}}\n"
      "{\"id\":\"b\",\"session\":5}\n"
      "{\"id\":\"c\",\"agent\":\"ran\"}\n"
      "{\"id\":\"d\",\"hostExecuted\":\"git\"}\n"
      "{\"id\":\"e\",\"exit\":\"0\"}\n");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["id"], "a");
}

}  // namespace
}  // namespace moat::agent::batch
