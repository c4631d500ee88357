// tests/unit/agent/line_editor_test.cc: the prompt's line editor (agent/line_editor.h): keys
// as a terminal in non-canonical mode sends them, the lines they end, the line redrawn.
#include "agent/line_editor.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace moat::agent {
namespace {

// The lines `keys` end, joined by '|'.
std::string lines(LineEditor& e, std::string_view keys) {
  std::string out;
  for (const auto& s : e.feed(keys))
    out += (out.empty() ? "" : "|") +
           (s.kind == LineEditor::Step::Kind::kEnd ? std::string("<end>") : s.line);
  return out;
}

TEST(LineEditor, ArrowsHomeEndAndBackspaceEditWhereTheCursorIs) {
  LineEditor e;
  EXPECT_EQ(lines(e, "helo wrld"), "");
  EXPECT_EQ(lines(e, "\x1b[D\x1b[D\x1b[Do"), "") << "left three times, then o";
  EXPECT_EQ(e.line(), "helo world");
  EXPECT_EQ(lines(e, "\x01\x1b[C\x1b[C\x1b[Cl"), "") << "Ctrl-A, right three times";
  EXPECT_EQ(e.line(), "hello world");
  EXPECT_EQ(lines(e, "\x05!\x7f\x7f"), "") << "Ctrl-E, !, two backspaces";
  EXPECT_EQ(lines(e, "d\x1b[Hsay \x1b[F."), "") << "Home and End as xterm sends them";
  EXPECT_EQ(lines(e, "\r"), "say hello world.");
  EXPECT_EQ(e.line(), "");
}

TEST(LineEditor, CtrlUAndCtrlWDeleteBeforeTheCursor) {
  LineEditor e;
  lines(e, "fix the tests  ");
  lines(e, "\x17");
  EXPECT_EQ(e.line(), "fix the ") << "Ctrl-W: the word and the spaces after it";
  lines(e, "\x1b[D\x1b[D\x15");
  EXPECT_EQ(e.line(), "e ") << "Ctrl-U: all before the cursor";
  EXPECT_EQ(e.cursor(), 0u);
}

TEST(LineEditor, UpAndDownGoThroughTheEarlierLinesAndBackToTheOneTyped) {
  LineEditor e;
  EXPECT_EQ(lines(e, "first\rsecond\n"), "first|second");
  lines(e, "thi");
  lines(e, "\x1b[A");
  EXPECT_EQ(e.line(), "second");
  lines(e, "\x1bOA");  // up in application cursor mode
  EXPECT_EQ(e.line(), "first");
  lines(e, "\x1b[A");
  EXPECT_EQ(e.line(), "first") << "nothing earlier";
  lines(e, "\x1b[B\x1b[B");
  EXPECT_EQ(e.line(), "thi") << "down past the last: the line being typed";
  lines(e,
        "\x1b[A\x01"
        "again: \r");
  EXPECT_EQ(lines(e, "\x1b[A\r"), "again: second") << "an edited recall is a new line";
}

TEST(LineEditor, AnEscapeSplitBetweenReadsAndUtf8AreOneKeyAndOneCharacter) {
  LineEditor e;
  lines(e, "\xc3\xa9t\xc3\xa9");
  lines(e, "\x1b");
  lines(e, "[");
  lines(e, "D");
  lines(e, "\x7f");
  EXPECT_EQ(e.line(), "\xc3\xa9\xc3\xa9") << "left then backspace removed the t";
  lines(e, "\x7f");
  EXPECT_EQ(e.line(), "\xc3\xa9") << "a two-byte character is one";
  EXPECT_EQ(e.cursor(), 0u);
}

TEST(LineEditor, CtrlDEndsOnlyAnEmptyLineAndControlsAreNotTakenNorDrawn) {
  LineEditor e;
  lines(e, "ab\x01");
  EXPECT_EQ(lines(e, "\x04"), "");
  EXPECT_EQ(e.line(), "b") << "Ctrl-D in a line deletes under the cursor";
  lines(e, "\x07\x0b\x1b]0;title\x07");
  EXPECT_EQ(e.line(), "0;titleb") << "a bell, VT and ESC ] are not inserted";
  e.clear();
  lines(e, "x\x1b[D");
  EXPECT_EQ(e.render("> "), "\r\x1b[K> x\x1b[1D");
  e.clear();
  EXPECT_EQ(lines(e, "\x04more"), "<end>") << "keys after the end are dropped";
}

}  // namespace
}  // namespace moat::agent
