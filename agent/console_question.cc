// agent/console_question.cc: a question as the console draws it (console_question.h).
#include "agent/console_question.h"

#include <cctype>
#include <cstdio>

#include "agent/visible.h"

namespace moat::agent {

std::string question_lines(std::string_view question, bool terminal) {
  const std::string shown = visible(one_line(std::string(question), 400));
  return "\n" + std::string(terminal ? kQuestionMark : "moat:") + " " + shown + "\n";
}

std::string question_choices(bool terminal) {
  return std::string(terminal ? kChoicesMark : "     ") +
         " allow once [y], allow for this session [s], deny [n]? ";
}

bool is_answer(const std::string& line) {
  std::string s;
  for (char c : line)
    if (c != ' ' && c != '\t' && c != '\r')
      s += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s == "y" || s == "yes" || s == "s" || s == "n" || s == "no";
}

PersonAnswer parse_answer(const std::optional<std::string>& line) {
  const std::size_t first = line ? line->find_first_not_of(" \t") : std::string::npos;
  const char c = first == std::string::npos ? '\0' : (*line)[first];
  PersonAnswer a;
  a.allow = c == 'y' || c == 'Y' || c == 's' || c == 'S';
  a.for_session = c == 's' || c == 'S';
  return a;
}

void print_answer(const PersonAnswer& a) {
  std::fprintf(stderr, "moat: %s\n",
               a.allow ? (a.for_session ? "allowed for this session" : "allowed once") : "denied");
  std::fflush(stderr);
}

}  // namespace moat::agent
