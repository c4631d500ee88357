// agent/console_terminal.h: the console's front end for typed lines (RunMode kLines and
// kTerminal): moatd's questions drawn on stderr and answered by a person's key or a script's
// line (docs/security.md, "The person's answers"), other lines steering the loop or, in a
// terminal session, its prompts and commands (agent/terminal_repl.h), and the loop's events
// drawn by the view (agent/terminal_view.h).
#pragma once

#include <termios.h>

#include <chrono>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "agent/console_front_end.h"
#include "agent/line_editor.h"
#include "agent/terminal_repl.h"
#include "agent/terminal_view.h"

namespace moat::agent {

class TerminalFrontEnd final : public ConsoleFrontEnd {
 public:
  // `session`: a terminal session (kTerminal), whose first prompt is `first_prompt` when it
  // is not empty; otherwise typed lines steer one run (kLines).
  TerminalFrontEnd(ConsoleLink& link, bool session, std::string first_prompt);

  void start() override;
  void before_wait() override;
  std::optional<std::chrono::milliseconds> wake_in() const override;
  void after_round() override;
  bool wants_stdin() const override;
  void input(std::string_view bytes) override;
  void input_ended() override { end_of_input(); }
  void ask(const std::string& ask, const std::string& question) override;
  void channel_ended() override;
  bool holds_loop_output() const override { return shown_; }
  void loop_output(std::string_view bytes) override { view_.feed(bytes); }
  void loop_ended() override;
  void erase() override { view_.erase(); }
  void draw() override { view_.draw(); }
  void interrupt() override;

 private:
  void take_line(std::string line);
  void take_session_line(const std::string& line);
  void show_question();
  void offer_choices();
  void discard_typed_ahead();
  void take_key(std::string_view keys);
  void end_of_input();
  void keys_mode(bool single);
  void sync_edit_mode();
  void edit(std::string_view keys);
  void interrupt_at_prompt();
  void answer(const std::optional<std::string>& line);
  // A terminal session: a command for the loop (`job`: a prompt or a compaction, a turn
  // runs), and the end the person asked for.
  void to_loop(const nlohmann::json& command, bool job);
  void end_session();

  const bool repl_;  // a terminal session (agent/terminal_repl.h)
  std::string first_prompt_;
  // A person at a terminal (stdin is one): an answer counts only once its question's choices
  // are shown, kAnswerGuard after the question; keys before that are discarded. With stdin a
  // pipe, a script answers, and its answers may come ahead of their questions (held_).
  const bool person_;
  const bool framed_;  // stderr is a terminal: the question is drawn behind kQuestionMark
  TerminalView view_;  // the loop's events drawn
  std::deque<std::pair<std::string, std::string>> asks_;  // ask id, question; front is shown
  bool shown_ = false;
  std::optional<std::chrono::steady_clock::time_point> guard_until_;  // choices not yet shown
  std::deque<std::string> held_;  // a script's answers, typed before their question came
  // A person's question is answered with one key: the terminal leaves canonical mode while it
  // is shown (its modes before, to restore), so y, s or n counts without Enter.
  std::optional<termios> line_mode_;
  bool stdin_eof_ = false;
  std::string partial_;
  bool ending_ = false;  // Ctrl-C at the prompt: a second one ends the session
  LoopCommands commands_;
  // A person at a terminal session's prompt edits the line (agent/line_editor.h): there only
  // the terminal is non-canonical (its modes before, to restore when a turn starts, a
  // question is drawn or the session ends).
  bool editing_ = false;
  std::optional<termios> edit_mode_;
  LineEditor editor_;
};

}  // namespace moat::agent
