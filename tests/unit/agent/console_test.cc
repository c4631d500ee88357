// tests/unit/agent/console_test.cc: what the console lets through from the loop's output to
// the terminal (agent/console.h printable): text, never a control sequence.
#include "agent/console.h"

#include <gtest/gtest.h>

namespace moat::agent {
namespace {

std::string all_at_once(const std::string& s) {
  std::string carry;
  return printable(s, carry);
}

TEST(ConsolePrintable, TextNewlinesTabsAndUtf8PassUnchanged) {
  EXPECT_EQ(all_at_once("  > bash: ls\n\tok é ü €\n"), "  > bash: ls\n\tok é ü €\n");
  EXPECT_EQ(all_at_once("no\xc2\xa0"
                        "break"),
            "no\xc2\xa0"
            "break")
      << "U+00A0 is text, not C1";
}

TEST(ConsolePrintable, EscapeSequencesCarriageReturnsAndDelAreRemoved) {
  // A title report (ESC [21t) would make the terminal type into the console's input; \r
  // would let the loop overwrite a line; ESC ] 52 writes the clipboard.
  EXPECT_EQ(all_at_once("a\x1b[21tb\rc\x7f"
                        "d\x1b]52;c;eQ==\x07"
                        "e\x08"),
            "a[21tbcd]52;c;eQ==e");
}

TEST(ConsolePrintable, C1ControlsAreRemovedEvenWhenSplitAcrossReads) {
  EXPECT_EQ(all_at_once("x\xc2\x9b"
                        "31mred"),
            "x31mred")
      << "CSI as a C1 control";
  // Every split of the input gives the same output.
  const std::string in =
      "a\xc2\x9b"
      "b\xc2\xa0"
      "c\xc2";
  for (std::size_t cut = 0; cut <= in.size(); ++cut) {
    SCOPED_TRACE("cut at byte " + std::to_string(cut));
    std::string carry;
    std::string out = printable(in.substr(0, cut), carry);
    out += printable(in.substr(cut), carry);
    EXPECT_EQ(out,
              "ab\xc2\xa0"
              "c");
    EXPECT_EQ(carry, "\xc2") << "a lone C2 at the end waits for its next byte";
  }
}

}  // namespace
}  // namespace moat::agent
