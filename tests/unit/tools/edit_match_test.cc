// tests/unit/tools/edit_match_test.cc: the normalised fallback maps every match back to the
// original bytes: replacing any one line leaves every other byte of the file as it was.
#include "tools/edit_match.h"

#include <gtest/gtest.h>

namespace moat::tools {
namespace {

struct Line {
  std::string raw;     // as in the file (Unicode lookalikes, trailing blanks)
  std::string folded;  // what a model would type
};

const std::vector<Line> kLines = {
    {"say \xE2\x80\x9Chello\xE2\x80\x9D  ", "say \"hello\""},
    {"it\xE2\x80\x99s fine\t", "it's fine"},
    {"a \xE2\x80\x94 b", "a - b"},
    {"x\xC2\xA0=\xE2\x80\x83y", "x = y"},
    {"\xEF\xAC\x81nal", "final"},
    {"plain line", "plain line"},
};

TEST(ApplyEdits, ReplacingAnyLineKeepsEveryOtherByteForBothLineEndings) {
  for (const std::string eol : {"\n", "\r\n"}) {
    std::string file = "\xEF\xBB\xBF";
    for (const auto& l : kLines) file += l.raw + eol;
    for (std::size_t i = 0; i < kLines.size(); ++i) {
      SCOPED_TRACE("line " + std::to_string(i) + (eol == "\n" ? " LF" : " CRLF"));
      auto out = apply_edits(file, {{kLines[i].folded, "NEW"}}, "f");
      ASSERT_TRUE(out) << out.error().message();
      std::string expected = "\xEF\xBB\xBF";
      for (std::size_t k = 0; k < kLines.size(); ++k) {
        if (k != i) {
          expected += kLines[k].raw + eol;
          continue;
        }
        // The matched text is replaced; the line's trailing blanks were not part of it.
        const std::size_t end = kLines[k].raw.find_last_not_of(" \t") + 1;
        expected += "NEW" + kLines[k].raw.substr(end) + eol;
      }
      EXPECT_EQ(out->content, expected);
      EXPECT_EQ(out->normalised, kLines[i].raw != kLines[i].folded);
    }
  }
}

TEST(ApplyEdits, NewTextFollowsTheFilesLineEndings) {
  auto out = apply_edits("a\r\nb\r\n", {{"a", "1\n2"}}, "f");
  ASSERT_TRUE(out);
  EXPECT_EQ(out->content, "1\r\n2\r\nb\r\n");
}

TEST(ApplyEdits, AnEditThatOnlyNormalisationTellsApartChangesNothingAndSaysSo) {
  auto out = apply_edits("say \xE2\x80\x9Chi\xE2\x80\x9D\n",
                         {{"say \"hi\"", "say \xE2\x80\x9Chi\xE2\x80\x9D"}}, "f");
  ASSERT_FALSE(out);
  EXPECT_NE(out.error().message().find("unchanged"), std::string::npos);
}

TEST(ApplyEdits, EmptyOldTextIsRejected) {
  auto out = apply_edits("x\n", {{"", "y"}}, "f");
  ASSERT_FALSE(out);
  EXPECT_EQ(out.error().message(), "edit 1: oldText is empty; give the text to replace");
}

}  // namespace
}  // namespace moat::tools
