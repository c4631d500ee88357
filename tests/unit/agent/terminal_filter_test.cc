// tests/unit/agent/terminal_filter_test.cc: the sandbox's terminal output as the person's
// terminal gets it (agent/terminal_filter.h): each family of sequences, whole and split at
// every byte, in 7-bit and C1 form.
#include "agent/terminal_filter.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace moat::agent {
namespace {

std::string filtered(const std::string& in) {
  TerminalFilter f;
  std::string out;
  f.feed(in, out);
  return out;
}

// The same bytes read in two pieces, cut at `cut`.
std::string filtered_split(const std::string& in, std::size_t cut) {
  TerminalFilter f;
  std::string out;
  f.feed(std::string_view(in).substr(0, cut), out);
  f.feed(std::string_view(in).substr(cut), out);
  return out;
}

// One byte at a time.
std::string filtered_bytewise(const std::string& in) {
  TerminalFilter f;
  std::string out;
  for (char c : in) f.feed(std::string_view(&c, 1), out);
  return out;
}

struct Case {
  const char* family;
  std::string in;
  std::string out;  // what the terminal gets
};

// Each family between two words: a dropped sequence leaves the words joined, a passed one
// stands between them unchanged (a C1 form comes out in its 7-bit form).
std::vector<Case> cases() {
  const std::string e = "\x1b";
  return {
      {"OSC 52 clipboard, BEL", "a" + e + "]52;c;cm0gLXJmIH4K\x07" "b", "ab"},
      {"OSC 52 clipboard, ST", "a" + e + "]52;c;cm0gLXJmIH4K" + e + "\\b", "ab"},
      {"OSC 52 clipboard query", "a" + e + "]52;c;?\x07" "b", "ab"},
      {"OSC 0 title and icon", "a" + e + "]0;pwned\x07" "b", "ab"},
      {"OSC 1 icon", "a" + e + "]1;pwned\x07" "b", "ab"},
      {"OSC 2 title", "a" + e + "]2;pwned" + e + "\\b", "ab"},
      {"OSC 8 link", "a" + e + "]8;;https://evil.example/" + e + "\\x" + e + "]8;;" + e + "\\b",
       "axb"},
      {"OSC 4 palette query", "a" + e + "]4;1;?\x07" "b", "ab"},
      {"OSC 11 background query", "a" + e + "]11;?" + e + "\\b", "ab"},
      {"OSC 7 working directory", "a" + e + "]7;file:///etc" + e + "\\b", "ab"},
      {"OSC 1337 iTerm file", "a" + e + "]1337;File=inline=1:AAAA\x07" "b", "ab"},
      {"OSC as C1 (U+009D), ended by C1 ST", "a\xc2\x9d" "0;pwned\xc2\x9c" "b", "ab"},
      {"OSC as 8-bit C1", "a\x9d" "0;pwned\x9c" "b", "ab"},
      {"OSC with UTF-8 inside", "a" + e + "]2;\xc5\x93\xc5\x9c" "x\x07" "b", "ab"},
      {"DCS DECRQSS query", "a" + e + "P$qm" + e + "\\b", "ab"},
      {"DCS XTGETTCAP query", "a" + e + "P+q544e" + e + "\\b", "ab"},
      {"DCS tmux passthrough", "a" + e + "Ptmux;" + e + e + "]52;c;eA==\x07" + e + "\\b", "ab"},
      {"DCS as C1", "a\xc2\x90$qm\xc2\x9c" "b", "ab"},
      {"SOS", "a" + e + "Xhidden" + e + "\\b", "ab"},
      {"PM", "a" + e + "^hidden" + e + "\\b", "ab"},
      {"APC kitty graphics", "a" + e + "_Ga=T,f=100;AAAA" + e + "\\b", "ab"},
      {"DSR status", "a" + e + "[5n" "b", "ab"},
      {"DSR cursor position", "a" + e + "[6n" "b", "ab"},
      {"DSR private", "a" + e + "[?6n" "b", "ab"},
      {"DA1", "a" + e + "[c" "b", "ab"},
      {"DA1 with 0", "a" + e + "[0c" "b", "ab"},
      {"DA2", "a" + e + "[>c" "b", "ab"},
      {"DA3", "a" + e + "[=c" "b", "ab"},
      {"DA1 as C1 CSI", "a\xc2\x9b" "c" "b", "ab"},
      {"DA1 as 8-bit CSI", "a\x9b" "c" "b", "ab"},
      {"DECID", "a" + e + "Zb", "ab"},
      {"DECID as C1", "a\xc2\x9a" "b", "ab"},
      {"DECREQTPARM", "a" + e + "[1x" "b", "ab"},
      {"DECRQM", "a" + e + "[?2004$p" "b", "ab"},
      {"XTVERSION", "a" + e + "[>q" "b", "ab"},
      {"XTWINOPS title report", "a" + e + "[21t" "b", "ab"},
      {"XTWINOPS icon report", "a" + e + "[20t" "b", "ab"},
      {"XTWINOPS size report", "a" + e + "[18t" "b", "ab"},
      {"XTWINOPS resize", "a" + e + "[8;1;1t" "b", "ab"},
      {"XTWINOPS title push", "a" + e + "[22;0t" "b", "ab"},
      {"kitty keyboard query", "a" + e + "[?u" "b", "ab"},
      {"XTQMODKEYS", "a" + e + "[?4m" "b", "ab"},
      {"XTSMGRAPHICS", "a" + e + "[?1;1;0S" "b", "ab"},
      {"media copy", "a" + e + "[5i" "b", "ab"},
      {"leave UTF-8", "a" + e + "%@b", "ab"},
      {"8-bit controls in answers", "a" + e + " Gb", "ab"},
      {"ENQ answerback", "a\x05" "b", "ab"},
      {"NUL", std::string("a\0b", 3), "ab"},
      {"an overlong CSI", "a" + e + "[" + std::string(5000, '1') + "mb", "ab"},
      {"CAN cancels a sequence", "a" + e + "[6\x18n" "b", "anb"},
      {"ESC abandons a CSI", "a" + e + "[6" + e + "[31mb", "a" + e + "[31mb"},
      // What passes.
      {"SGR colours", "a" + e + "[1;31mb" + e + "[0m", "a" + e + "[1;31mb" + e + "[0m"},
      {"SGR 24-bit, subparameters", "a" + e + "[38:2::10:20:30;4:3mb",
       "a" + e + "[38:2::10:20:30;4:3mb"},
      {"SGR as C1 CSI", "a\xc2\x9b" "32mb", "a" + e + "[32mb"},
      {"cursor position", "a" + e + "[10;20Hb", "a" + e + "[10;20Hb"},
      {"cursor up and column", "a" + e + "[3A" + e + "[5Gb", "a" + e + "[3A" + e + "[5Gb"},
      {"erase display and line", "a" + e + "[2J" + e + "[Kb", "a" + e + "[2J" + e + "[Kb"},
      {"alternate screen", "a" + e + "[?1049h" + e + "[?1049lb",
       "a" + e + "[?1049h" + e + "[?1049lb"},
      {"bracketed paste", "a" + e + "[?2004hb", "a" + e + "[?2004hb"},
      {"cursor visibility", "a" + e + "[?25lb", "a" + e + "[?25lb"},
      {"scrolling region", "a" + e + "[1;24rb", "a" + e + "[1;24rb"},
      {"cursor shape", "a" + e + "[2 qb", "a" + e + "[2 qb"},
      {"modifyOtherKeys", "a" + e + "[>4;2mb", "a" + e + "[>4;2mb"},
      {"save and restore cursor", "a" + e + "7x" + e + "8b", "a" + e + "7x" + e + "8b"},
      {"line drawing charset", "a" + e + "(0q" + e + "(Bb", "a" + e + "(0q" + e + "(Bb"},
      {"keypad mode", "a" + e + "=" + e + ">b", "a" + e + "=" + e + ">b"},
      {"reverse index", "a" + e + "Mb", "a" + e + "Mb"},
      {"C0 controls", "a\r\n\t\x08\x07" "b", "a\r\n\t\x08\x07" "b"},
      {"a C0 inside a CSI acts at once", "a" + e + "[1\r;2Hb", "a\r" + e + "[1;2Hb"},
      {"UTF-8 text, continuation bytes in 0x80-0x9F", "\xc5\x93\xc2\xa0\xe2\x82\xac\xf0\x9f\x98\x80",
       "\xc5\x93\xc2\xa0\xe2\x82\xac\xf0\x9f\x98\x80"},
  };
}

TEST(TerminalFilter, EachFamilyIsDroppedOrPassedWhole) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.family);
    EXPECT_EQ(filtered(c.in), c.out);
  }
}

TEST(TerminalFilter, ASequenceSplitAtAnyByteIsDecidedTheSame) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.family);
    for (std::size_t cut = 0; cut <= c.in.size(); ++cut) {
      SCOPED_TRACE("cut at byte " + std::to_string(cut));
      ASSERT_EQ(filtered_split(c.in, cut), c.out);
    }
    EXPECT_EQ(filtered_bytewise(c.in), c.out);
  }
}

// A dropped string is skipped as it comes: a megabyte of OSC 52 holds nothing and the text
// after it shows.
TEST(TerminalFilter, ALongStringHoldsNothingAndTheTextAfterItShows) {
  TerminalFilter f;
  std::string out;
  f.feed("\x1b]52;c;", out);
  for (int i = 0; i < 1024; ++i) f.feed(std::string(1024, 'A'), out);
  f.feed("\x07ok", out);
  EXPECT_EQ(out, "ok");
}

// Whatever the input, nothing that comes out opens a string or queries the terminal: random
// bytes weighted towards ESC, C1 and sequence bytes.
TEST(TerminalFilter, NoOutputOfRandomBytesHoldsAStringOrAQuery) {
  static constexpr char kBytes[] = "\x1b\x1b\x1b[]P_^X\\\x07\x9b\x9d\xc2\x90\x9c;?>=0126cnqtu$ ";
  const std::string alphabet(kBytes, sizeof kBytes - 1);
  unsigned seed = 26;
  for (int round = 0; round < 2000; ++round) {
    std::string in;
    for (int i = 0; i < 64; ++i) {
      seed = seed * 1103515245u + 12345u;
      in += alphabet[(seed >> 16) % alphabet.size()];
    }
    const std::string out = filtered(in);
    SCOPED_TRACE(testing::PrintToString(in));
    for (const char* bad : {"\x1b]", "\x1bP", "\x1b_", "\x1b^", "\x1bX", "\x1bZ", "\x9b", "\x9d",
                            "\xc2\x9b", "\xc2\x9d", "\xc2\x90"})
      ASSERT_EQ(out.find(bad), std::string::npos) << testing::PrintToString(out);
    for (std::size_t at = out.find("\x1b["); at != std::string::npos; at = out.find("\x1b[", at + 1)) {
      const std::size_t end = out.find_first_of("@ABCDEFGHIJKLMPSTXZ`abdefghlmpqrsu", at + 2);
      ASSERT_NE(end, std::string::npos) << testing::PrintToString(out);
      ASSERT_EQ(std::string("nctxi").find(out[end]), std::string::npos)
          << testing::PrintToString(out);
    }
  }
}

}  // namespace
}  // namespace moat::agent
