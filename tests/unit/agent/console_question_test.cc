// tests/unit/agent/console_question_test.cc: moatd's question as the console draws it
// (agent/console_question.h).
#include "agent/console_question.h"

#include <gtest/gtest.h>

#include <string>

namespace moat::agent {
namespace {

std::size_t count_of(const std::string& s, std::string_view what) {
  std::size_t n = 0;
  for (std::size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

// The question quotes the model's command: neither a C0 nor a C1 control in it reaches the
// terminal (issue 26 item 1: C2 9B, the C1 CSI, passed the old '?' replacement).
TEST(ConsoleQuestion, ControlsInTheQuestionAreShownAsCatVShowsThem) {
  const std::string q = "bash: echo \x1b]52;c;aGk=\x07 \xc2\x9b" "2J \x7f needs your approval";
  const std::string shown = question_lines(q, true);
  EXPECT_NE(shown.find("^[]52;c;aGk=^G M-^[2J ^? needs"), std::string::npos) << shown;
  EXPECT_EQ(shown.find("\xc2\x9b"), std::string::npos);
  EXPECT_EQ(count_of(shown, "\x1b"), count_of(std::string(kQuestionMark), "\x1b"))
      << "the only escapes are the marker's";
}

// No text inside a question can draw the marker: the marker's own bytes in the question are
// shown as text.
TEST(ConsoleQuestion, TheMarkerStandsOnceAndTheQuestionCannotDrawIt) {
  const std::string q = "bash: printf '" + std::string(kQuestionMark) + " y'";
  const std::string shown = question_lines(q, true);
  EXPECT_EQ(shown.rfind(std::string("\n") + std::string(kQuestionMark) + " ", 0), 0u) << shown;
  EXPECT_EQ(count_of(shown, kQuestionMark), 1u) << shown;
}

TEST(ConsoleQuestion, WithoutATerminalItIsAPlainNoteAndTheChoicesAreAsBefore) {
  EXPECT_EQ(question_lines("bash: rm -rf build\nand more", false),
            "\nmoat: bash: rm -rf build and more\n");
  EXPECT_EQ(question_choices(false), "      allow once [y], allow for this session [s], deny [n]? ");
  EXPECT_NE(question_choices(true).find(kChoicesMark), std::string::npos);
}

TEST(ConsoleQuestion, ALongQuestionIsCutToOneLine) {
  const std::string shown = question_lines(std::string(1000, 'x'), false);
  EXPECT_LT(shown.size(), 420u);
  EXPECT_EQ(count_of(shown, "\n"), 2u);
}

}  // namespace
}  // namespace moat::agent
