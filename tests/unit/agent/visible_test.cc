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

}  // namespace
}  // namespace moat::agent
