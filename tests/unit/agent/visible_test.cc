// tests/unit/agent/visible_test.cc: what a person is shown of untrusted text (agent/visible.h):
// text, and every control character as visible text (`cat -v`), never a control sequence.
#include "agent/visible.h"

#include <gtest/gtest.h>

namespace moat::agent {
namespace {

TEST(Visible, TextNewlinesTabsAndUtf8PassUnchanged) {
  EXPECT_EQ(visible("  > bash: ls\n\tok é ü €\n"), "  > bash: ls\n\tok é ü €\n");
  EXPECT_EQ(visible("no\xc2\xa0"
                    "break"),
            "no\xc2\xa0"
            "break")
      << "U+00A0 is text, not C1";
}

TEST(Visible, EscapeSequencesCarriageReturnsAndDelAreShownAsCatVShowsThem) {
  // A title report (ESC [21t) would make the terminal type into the console's input; \r
  // would let the loop overwrite a line; ESC ] 52 writes the clipboard.
  EXPECT_EQ(visible("a\x1b[21tb\rc\x7f"
                    "d\x1b]52;c;eQ==\x07"
                    "e\x08"),
            "a^[[21tb^Mc^?d^[]52;c;eQ==^Ge^H");
  EXPECT_EQ(visible(std::string("x\0y", 3)), "x^@y");
}

TEST(Visible, C1ControlsAreShownEvenWhenSplitAcrossReads) {
  EXPECT_EQ(visible("x\xc2\x9b"
                    "31mred"),
            "xM-^[31mred")
      << "CSI as a C1 control";
  // Every split of the input gives the same output.
  const std::string in =
      "a\xc2\x9b"
      "b\xc2\xa0"
      "c\xc2";
  for (std::size_t cut = 0; cut <= in.size(); ++cut) {
    SCOPED_TRACE("cut at byte " + std::to_string(cut));
    std::string carry;
    std::string out = visible(in.substr(0, cut), carry);
    out += visible(in.substr(cut), carry);
    EXPECT_EQ(out,
              "aM-^[b\xc2\xa0"
              "c");
    EXPECT_EQ(carry, "\xc2") << "a lone C2 at the end waits for its next byte";
  }
}

TEST(Visible, WholeTextKeepsALoneC2AtItsEnd) {
  EXPECT_EQ(visible("end\xc2"), "end\xc2");
  EXPECT_EQ(visible("\xc2\x85"), "M-^E") << "NEL, a C1 line break";
}

// Issue 27 item 18: long lines wrap at spaces, at the terminal's width; the spaces at a break
// are dropped, a newline starts the count again, indentation at a line's start stays.
TEST(Wrap, LinesBreakAtSpacesWithinTheWidth) {
  EXPECT_EQ(wrapped("aaaa bbbb cccc dddd", 10), "aaaa bbbb\ncccc dddd");
  EXPECT_EQ(wrapped("aaaa bbbbb cc", 10), "aaaa bbbbb\ncc") << "a word ending at the width fits";
  EXPECT_EQ(wrapped("one\n    indented words here", 12), "one\n    indented\nwords here");
  EXPECT_EQ(wrapped("short", 80), "short");
}

// Only a word longer than the width is broken inside, where the width ends; display width
// counts a wide character as two columns and never splits one.
TEST(Wrap, OnlyAWordLongerThanTheWidthIsBrokenAndWidthIsDisplayWidth) {
  EXPECT_EQ(wrapped("ab " + std::string(20, 'x') + " cd", 8), "ab\nxxxxxxxx\nxxxxxxxx\nxxxx cd");
  EXPECT_EQ(display_width("\xe6\x97\xa5\xe6\x9c\xac"), 4u) << "two CJK characters";
  EXPECT_EQ(display_width("\xc3\xa9t\xc3\xa9"), 3u) << "é is one column, two bytes";
  // 8 columns: four CJK characters fit, the fifth goes to the next line whole.
  EXPECT_EQ(wrapped("\xe6\x97\xa5\xe6\x97\xa5\xe6\x97\xa5\xe6\x97\xa5\xe6\x97\xa5", 8),
            "\xe6\x97\xa5\xe6\x97\xa5\xe6\x97\xa5\xe6\x97\xa5\n\xe6\x97\xa5");
  EXPECT_EQ(wrapped("\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9 \xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9", 8),
            "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\n\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9")
      << "4 + 1 + 4 > 8 columns although 17 bytes";
}

// Streamed in pieces, a word split between pieces is wrapped as a whole.
TEST(Wrap, AStreamWrapsAWordSplitBetweenPieces) {
  Wrapper w;
  std::string out = w.feed("aaaa bb", 10);
  EXPECT_EQ(out, "aaaa") << "the word being typed waits";
  out += w.feed("bbbbb cc", 10);
  out += w.flush();
  EXPECT_EQ(out, "aaaa\nbbbbbbb cc") << "aaaa bbbbbbb is 12 columns";
  EXPECT_EQ(w.column(), 10u);
}

}  // namespace
}  // namespace moat::agent
