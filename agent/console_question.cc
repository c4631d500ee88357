// agent/console_question.cc: a question as the console draws it (console_question.h).
#include "agent/console_question.h"

#include "agent/run_support.h"
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

}  // namespace moat::agent
