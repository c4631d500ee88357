// agent/console_question.h: how the console shows moatd's question to a person at a terminal,
// so that no text the loop relays (the model's, a tool's output) can pass for one, and from
// when a key counts as its answer (docs/security.md, "The person's answers").
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace moat::agent {

// After a question is drawn at a terminal, keys are discarded for this long before its
// choices are shown and an answer counts, as a browser holds its permission prompt's buttons
// (Firefox: security.dialog_enable_delay). A key pressed as the question appears was meant
// for what stood there before it (issue 26, item 1): 500 ms is past a typed-ahead "y<Enter>"
// yet short enough that a person reading the question never waits for it.
inline constexpr std::chrono::milliseconds kAnswerGuard{500};

// The framing of a question at a terminal: a reverse-video marker. visible() turns every ESC
// of untrusted text into "^[", and the view's own sequences are cursor moves and clears only,
// so no other text on the screen can carry this attribute.
inline constexpr std::string_view kQuestionMark = "\x1b[1;7m moat asks \x1b[0m";
inline constexpr std::string_view kChoicesMark = "\x1b[1;7m moat \x1b[0m";

// The question's lines, from a blank line: moatd's text (which quotes the model's command) on
// one line of at most 400 bytes, its controls (C0, DEL and C1) shown as visible() shows them.
// `terminal`: stderr is a terminal, and the question stands behind kQuestionMark; otherwise
// it starts "moat: " as every note does.
std::string question_lines(std::string_view question, bool terminal);

// The choices, left on the line where the answer is typed.
std::string question_choices(bool terminal);

// A person's answer to moatd's question: y = allow once, s = allow for this session,
// anything else (and no line at all) = deny.
struct PersonAnswer {
  bool allow = false;
  bool for_session = false;
};
PersonAnswer parse_answer(const std::optional<std::string>& line);
// Whether a line typed ahead of a question is an answer to it (y, yes, s, n, no).
bool is_answer(const std::string& line);
// The answer echoed back on stderr.
void print_answer(const PersonAnswer& a);

}  // namespace moat::agent
