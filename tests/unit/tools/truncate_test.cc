// tests/unit/tools/truncate_test.cc: head/tail truncation by whole lines, UTF-8 safety.
#include "tools/truncate.h"

#include <gtest/gtest.h>

namespace moat::tools {
namespace {

TEST(TruncateHead, TextWithinLimitsIsUntouched) {
  const auto t = truncate_head("a\nb\n", 10, 100);
  EXPECT_FALSE(t.truncated);
  EXPECT_EQ(t.text, "a\nb\n");
  EXPECT_EQ(t.total_lines, 2u);
}

TEST(TruncateHead, KeepsTheFirstWholeLinesForEveryByteLimit) {
  const std::string text = "one\ntwo\nthree\nfour\n";
  for (std::size_t limit = 0; limit < text.size(); ++limit) {
    SCOPED_TRACE("limit " + std::to_string(limit));
    const auto t = truncate_head(text, 100, limit);
    EXPECT_TRUE(t.truncated);
    EXPECT_LE(t.text.size(), limit);
    EXPECT_EQ(text.substr(0, t.text.size()), t.text);            // a prefix
    EXPECT_TRUE(t.text.empty() || text[t.text.size()] == '\n');  // whole lines
    EXPECT_EQ(t.first_line_exceeds_limit, limit < 3);
  }
}

TEST(TruncateHead, LineLimitWins) {
  const auto t = truncate_head("1\n2\n3\n4\n", 2, 100);
  EXPECT_EQ(t.text, "1\n2");
  EXPECT_EQ(t.truncated_by, "lines");
  EXPECT_EQ(t.output_lines, 2u);
}

TEST(TruncateTail, KeepsTheLastWholeLinesForEveryByteLimit) {
  const std::string text = "one\ntwo\nthree\nfour";
  for (std::size_t limit = 4; limit < text.size(); ++limit) {
    SCOPED_TRACE("limit " + std::to_string(limit));
    const auto t = truncate_tail(text, 100, limit);
    EXPECT_TRUE(t.truncated);
    EXPECT_LE(t.text.size(), limit);
    EXPECT_EQ(text.substr(text.size() - t.text.size()), t.text);  // a suffix
    EXPECT_EQ(text[text.size() - t.text.size() - 1], '\n');       // of whole lines
  }
}

TEST(TruncateTail, AnOverlongLastLineKeepsItsTailOnAUtf8Boundary) {
  const std::string text = "x\n\xC3\xA9\xC3\xA9\xC3\xA9";  // "ééé", 6 bytes
  for (std::size_t limit = 1; limit < 6; ++limit) {
    SCOPED_TRACE("limit " + std::to_string(limit));
    const auto t = truncate_tail(text, 100, limit);
    EXPECT_TRUE(t.last_line_partial);
    EXPECT_EQ(t.text.size(), limit / 2 * 2);  // never half a character
    EXPECT_EQ(sanitize_utf8(t.text), t.text);
  }
}

TEST(TruncateLine, CutsAtCodePointsAndSaysSo) {
  EXPECT_EQ(truncate_line("abcdef", 3), "abc... [truncated]");
  EXPECT_EQ(truncate_line("abc", 3), "abc");
  EXPECT_EQ(truncate_line("\xC3\xA9\xC3\xA9\xC3\xA9", 2), "\xC3\xA9\xC3\xA9... [truncated]");
}

TEST(FormatSize, PrintsWholeAndFractionalUnits) {
  EXPECT_EQ(format_size(12), "12 B");
  EXPECT_EQ(format_size(50 * 1024), "50 KB");
  EXPECT_EQ(format_size(1536), "1.5 KB");
  EXPECT_EQ(format_size(16u << 20), "16 MB");
}

TEST(SanitizeUtf8, ReplacesInvalidSequencesOnly) {
  EXPECT_EQ(sanitize_utf8("ok \xC3\xA9"), "ok \xC3\xA9");
  EXPECT_EQ(sanitize_utf8("a\xFF"
                          "b"),
            "a\xEF\xBF\xBD"
            "b");
  EXPECT_EQ(sanitize_utf8("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");                  // overlong '/'
  EXPECT_EQ(sanitize_utf8("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // surrogate
}

TEST(CountLines, AFinalNewlineDoesNotStartALine) {
  EXPECT_EQ(count_lines(""), 0u);
  EXPECT_EQ(count_lines("a"), 1u);
  EXPECT_EQ(count_lines("a\n"), 1u);
  EXPECT_EQ(count_lines("a\nb"), 2u);
}

}  // namespace
}  // namespace moat::tools
