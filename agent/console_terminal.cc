// agent/console_terminal.cc: the console's front end for typed lines (console_terminal.h).
#include "agent/console_terminal.h"

#include <poll.h>
#include <unistd.h>

#include <cstdio>

#include "agent/console_question.h"
#include "agent/visible.h"
#include "base/lf_lines.h"
#include "base/ticks.h"

namespace moat::agent {
namespace {

constexpr std::size_t kMaxLine = 64 * 1024;  // a line without end is taken in pieces
constexpr std::size_t kMaxHeldAnswers = 16;  // a script's answers, ahead of their question

bool in_foreground() { return ::tcgetpgrp(STDIN_FILENO) == ::getpgrp(); }

}  // namespace

TerminalFrontEnd::TerminalFrontEnd(ConsoleLink& link, bool session, std::string first_prompt)
    : ConsoleFrontEnd(link),
      repl_(session),
      first_prompt_(std::move(first_prompt)),
      person_(::isatty(STDIN_FILENO) == 1),
      framed_(::isatty(STDERR_FILENO) == 1),
      view_(stdout, stderr, ::isatty(STDERR_FILENO) == 1) {
  if (!repl_) return;
  view_.set_repl();
  editing_ = person_;
}

void TerminalFrontEnd::start() {
  if (repl_ && !first_prompt_.empty())
    to_loop({{"type", "prompt"}, {"message", first_prompt_}}, true);
}

void TerminalFrontEnd::before_wait() {
  sync_edit_mode();
  // The question's guard is over (a poll timeout may end it: no fd signals it).
  if (guard_until_ && std::chrono::steady_clock::now() >= *guard_until_) offer_choices();
}

// Until the question's guard ends or the next look at the foreground.
std::optional<std::chrono::milliseconds> TerminalFrontEnd::wake_in() const {
  using std::chrono::milliseconds;
  std::optional<milliseconds> wait;
  if (guard_until_)
    wait = std::max(milliseconds(0), std::chrono::ceil<milliseconds>(
                                         *guard_until_ - std::chrono::steady_clock::now()));
  const bool background = !stdin_eof_ && ::isatty(STDIN_FILENO) == 1 && !in_foreground();
  if (background) wait = wait ? std::min(*wait, ticks::kForeground) : ticks::kForeground;
  return wait;
}

void TerminalFrontEnd::after_round() {
  if (!shown_) view_.tick();
  if (repl_ && !view_.busy()) interrupts_reset();  // the turn is over: Ctrl-C counts afresh
}

// A run in a background job must not read its terminal: the read would stop the whole
// process with SIGTTIN. It reads once it is in the foreground again.
bool TerminalFrontEnd::wants_stdin() const {
  return !stdin_eof_ && (::isatty(STDIN_FILENO) != 1 || in_foreground());
}

void TerminalFrontEnd::input(std::string_view bytes) {
  if (guard_until_) return;  // keys pressed as the question appeared were not meant for it
  if (line_mode_ && shown_) return take_key(bytes);
  if (edit_mode_) return edit(bytes);
  take_lf_lines(partial_, bytes, [this](std::string line) { take_line(std::move(line)); });
  if (partial_.size() >= kMaxLine) {
    take_line(partial_.substr(0, kMaxLine));
    partial_.erase(0, kMaxLine);
  }
}

// The first Ctrl-C cancels the turn, a second one ends the loop at once. A question on the
// screen is declined, as moatd declines it when the call is cancelled. In a terminal session no
// turn runs at the prompt: there Ctrl-C ends the session as Ctrl-D does.
void TerminalFrontEnd::interrupt() {
  view_.erase();
  if (repl_ && !view_.busy() && interrupts() == 0) {
    interrupt_at_prompt();
  } else if (cancel_then_quit()) {
    std::fprintf(stderr, "\nmoat: cancelling the turn (Ctrl-C again to quit)\n");
  }
  while (!asks_.empty()) answer(std::nullopt);
}

// Ctrl-C at the prompt drops what was typed on the line (the terminal's line discipline does);
// only a second one, before another line is typed, ends the session, so a Ctrl-C meant for a
// turn that has just ended does not end the session with it.
void TerminalFrontEnd::interrupt_at_prompt() {
  if (ending_) return end_session();
  ending_ = true;
  editor_.clear();  // as the line discipline drops the line
  std::fputc('\n', stderr);
  view_.say("moat: Ctrl-C again to end the session (or Ctrl-D, /exit)");
  view_.show_prompt();
}

void TerminalFrontEnd::loop_ended() {
  keys_mode(false);
  editing_ = false;
  sync_edit_mode();
  view_.feed("\n");  // a last event without its LF
  view_.ended();
}

// A key at a question on the screen: y, s or n (either case) answers it, echoed; any other key
// is ignored. What follows the answering key (its habitual Enter left out) was typed after the
// answer: once no question is shown it is the prompt's, and Ctrl-D in it ends the input as at
// the prompt; while the next question is shown it is dropped (typed before that question).
void TerminalFrontEnd::take_key(std::string_view keys) {
  const std::size_t at = keys.find_first_of("ysnYSN");
  if (at == std::string_view::npos) return;
  const char eof = line_mode_ ? static_cast<char>(line_mode_->c_cc[VEOF]) : '\x04';
  // Keys already at the terminal are read before it leaves non-canonical mode: the line
  // discipline would not scan them again for Enter or Ctrl-D once canonical.
  std::string after(keys.substr(at + 1));
  char more[4096];
  for (pollfd p{STDIN_FILENO, POLLIN, 0}; ::poll(&p, 1, 0) > 0 && (p.revents & POLLIN);) {
    const ssize_t n = ::read(STDIN_FILENO, more, sizeof more);
    if (n <= 0) break;
    after.append(more, static_cast<std::size_t>(n));
  }
  std::fprintf(stderr, "%c\n", keys[at]);
  answer(std::string(1, keys[at]));
  std::string_view rest = after;
  if (!rest.empty() && (rest[0] == '\n' || rest[0] == '\r')) rest.remove_prefix(1);
  if (shown_ || rest.empty()) return;
  const std::size_t end = rest.find(eof);
  take_lf_lines(partial_, rest.substr(0, end), [this](std::string l) { take_line(std::move(l)); });
  if (end != std::string_view::npos) end_of_input();
}

void TerminalFrontEnd::end_of_input() {
  if (!partial_.empty()) take_line(std::exchange(partial_, std::string()));
  if (repl_) view_.say("");  // Ctrl-D at the prompt: what follows starts on a line of its own
  // End of input: the loop gets it too, and every question, now or later, is declined.
  stdin_eof_ = true;
  link_.end_loop_input();
  while (!asks_.empty()) answer(std::nullopt);
}

void TerminalFrontEnd::take_line(std::string line) {
  if (!line.empty() && line.back() == '\r') line.pop_back();
  if (shown_) return answer(line);
  ending_ = false;
  if (view_.command(line)) {  // /cost, /diff, /policy, /model
    if (repl_ && !view_.busy()) view_.show_prompt();
    return;
  }
  if (repl_ && !(view_.busy() && is_answer(line))) return take_session_line(line);
  // Typed ahead of a question: a sentence steers the loop. A script's answer waits for its
  // question; a person's answers only a question on the screen (issue 26, item 1: a "y" typed
  // at text made to look like a question must not approve the next real one).
  if (is_answer(line)) {
    if (person_)
      return view_.say("moat: no question is waiting, so \"" + visible(line) +
                       "\" was not taken as an answer (moat's own questions are highlighted; "
                       "answer one once its choices are shown)");
    if (held_.size() < kMaxHeldAnswers) held_.push_back(std::move(line));
    return;
  }
  if (line.find_first_not_of(" \t") == std::string::npos || !link_.loop_reads()) return;
  line += '\n';
  if (!link_.write_to_loop(line))
    std::fprintf(stderr, "moat: the agent is not reading; the message was not delivered\n");
}

// A terminal session's line: a prompt or a command for the loop, an answer of the console's
// own, or the session's end (agent/terminal_repl.h).
void TerminalFrontEnd::take_session_line(const std::string& line) {
  const TypedLine t = read_typed_line(line, view_.busy());
  if (t.kind == TypedLine::Kind::kLoop) {
    const std::string type = t.command.value("type", "");
    return to_loop(t.command, type == "prompt" || type == "compact");
  }
  if (t.kind == TypedLine::Kind::kSay) view_.say(t.text);
  if (t.kind == TypedLine::Kind::kEnd) return end_session();
  if (!view_.busy()) view_.show_prompt();
}

void TerminalFrontEnd::to_loop(const nlohmann::json& command, bool job) {
  if (!link_.loop_reads()) return;
  if (!link_.write_to_loop(commands_.next(command))) {
    std::fprintf(stderr, "moat: the agent is not reading; the line was not delivered\n");
    return;
  }
  if (job) view_.started();
}

// The loop sees its input end, finishes what runs and exits; the session and the audit log
// are closed as at the end of any run.
void TerminalFrontEnd::end_session() {
  stdin_eof_ = true;
  link_.end_loop_input();
  while (!asks_.empty()) answer(std::nullopt);
}

void TerminalFrontEnd::ask(const std::string& ask, const std::string& question) {
  asks_.emplace_back(ask, question);
  show_question();
}

// moatd ended the session (or broke the channel): nothing is left to answer.
void TerminalFrontEnd::channel_ended() {
  asks_.clear();
  shown_ = false;
  guard_until_.reset();
  keys_mode(false);
}

void TerminalFrontEnd::show_question() {
  if (shown_ || asks_.empty()) return;
  // What the loop wrote before moatd asked (the model's text, the call's line) comes first.
  link_.drain_loop_output();
  view_.erase();  // the running calls are drawn again once it is answered
  const std::string lines = question_lines(asks_.front().second, framed_);
  std::fwrite(lines.data(), 1, lines.size(), stderr);
  std::fflush(stderr);
  shown_ = true;
  sync_edit_mode();  // the terminal as it was, before the question's own mode
  if (person_ && !stdin_eof_) {
    // What was typed before the question came is not its answer; nor is a key pressed as it
    // appears: the choices, and with them the answer, come after the guard (offer_choices).
    keys_mode(true);
    discard_typed_ahead();
    guard_until_ = std::chrono::steady_clock::now() + kAnswerGuard;
    return;
  }
  const std::string choices = question_choices(framed_);
  std::fwrite(choices.data(), 1, choices.size(), stderr);
  std::fflush(stderr);
  if (!held_.empty()) {
    const std::string typed = std::move(held_.front());
    held_.pop_front();
    answer(typed);
  } else if (stdin_eof_) {
    answer(std::nullopt);  // nobody is left to type
  }
}

// The guard is over: what was typed during it is dropped, and the next line answers.
void TerminalFrontEnd::offer_choices() {
  guard_until_.reset();
  discard_typed_ahead();
  const std::string choices = question_choices(framed_);
  std::fwrite(choices.data(), 1, choices.size(), stderr);
  std::fflush(stderr);
}

// The console's part of a line and the terminal's: a canonical-mode terminal holds a line
// until Enter, so a "y" typed before the question would otherwise complete as its answer.
void TerminalFrontEnd::discard_typed_ahead() {
  partial_.clear();
  editor_.clear();
  ::tcflush(STDIN_FILENO, TCIFLUSH);
}

// Non-canonical at the prompt only: not while a turn runs (typed lines steer it, as the line
// discipline reads them) nor while a question is shown (keys_mode), nor in the background.
void TerminalFrontEnd::sync_edit_mode() {
  const bool want = editing_ && !stdin_eof_ && !shown_ && !line_mode_ && !view_.busy();
  if (want == edit_mode_.has_value() || !in_foreground()) return;
  if (!want) {
    (void)::tcsetattr(STDIN_FILENO, TCSANOW, &*edit_mode_);
    edit_mode_.reset();
    return;
  }
  termios t{};
  if (::tcgetattr(STDIN_FILENO, &t) != 0) return;
  edit_mode_ = t;
  t.c_lflag &= ~static_cast<tcflag_t>(ICANON | ECHO);  // ISIG stays: Ctrl-C is a signal
  t.c_cc[VMIN] = 1;
  t.c_cc[VTIME] = 0;
  (void)::tcsetattr(STDIN_FILENO, TCSANOW, &t);
}

// Keys at the prompt: the line is redrawn as it is edited; Enter takes it as a typed line.
void TerminalFrontEnd::edit(std::string_view keys) {
  for (const LineEditor::Step& step : editor_.feed(keys)) {
    if (step.kind == LineEditor::Step::Kind::kEnd) return end_of_input();
    std::fputc('\n', stderr);
    take_line(step.line);
  }
  if (!edit_mode_ || shown_ || view_.busy()) return;
  const std::string line = editor_.render("> ");
  std::fputs(line.c_str(), stderr);
  std::fflush(stderr);
}

// `single`: the terminal hands each key over as it is typed, unechoed (Ctrl-C still signals);
// otherwise the modes it had are restored (keys typed after the answer are kept). TCSAFLUSH
// drops what was typed before the switch.
void TerminalFrontEnd::keys_mode(bool single) {
  if (single && !line_mode_) {
    termios t{};
    if (::tcgetattr(STDIN_FILENO, &t) != 0) return;
    line_mode_ = t;
    t.c_lflag &= ~static_cast<tcflag_t>(ICANON | ECHO);
    t.c_cc[VMIN] = 1;
    t.c_cc[VTIME] = 0;
    (void)::tcsetattr(STDIN_FILENO, TCSAFLUSH, &t);
  } else if (!single && line_mode_) {
    (void)::tcsetattr(STDIN_FILENO, TCSANOW, &*line_mode_);
    line_mode_.reset();
  }
}

void TerminalFrontEnd::answer(const std::optional<std::string>& line) {
  if (asks_.empty()) return;
  guard_until_.reset();
  keys_mode(false);
  const PersonAnswer a = parse_answer(line);
  view_.erase();  // drawn again below the answer
  if (shown_) print_answer(a);
  link_.send_answer(asks_.front().first, a.allow, a.for_session);
  asks_.pop_front();
  shown_ = false;
  show_question();
}

}  // namespace moat::agent
