// agent/line_editor.h: the line typed at a terminal session's prompt (agent/terminal_repl.h),
// edited in non-canonical mode: left/right, home/end, backspace, Ctrl-U/W, and up/down
// through this session's earlier lines. Only the prompt uses it: a question's key is read by
// the console in its own mode (agent/console_question.h), and while a turn runs the terminal
// is canonical again.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace moat::agent {

class LineEditor {
 public:
  // What an editing key does (line_editor.cc's kBindings names the keys).
  enum class Edit {
    kLeft,
    kRight,
    kHome,
    kEnd,
    kBack,
    kDelete,
    kKillBefore,
    kKillWord,
    kUp,
    kDown
  };
  struct Step {
    enum class Kind { kLine, kEnd } kind;  // Enter ended a line; Ctrl-D on an empty one
    std::string line;
  };
  // Keys as the terminal sent them (an escape sequence may be split between reads): the lines
  // they ended, in order. Keys after a kEnd are dropped.
  std::vector<Step> feed(std::string_view keys);
  // The line redrawn in place after `prompt`, controls made visible, the cursor where it is.
  std::string render(std::string_view prompt) const;
  // The line and any half-read escape sequence dropped (Ctrl-C, a question drawn).
  void clear();
  const std::string& line() const { return line_; }
  std::size_t cursor() const { return cursor_; }

 private:
  bool key(char c, std::vector<Step>& steps);
  bool bound(std::string_view keys);
  void apply(Edit edit);
  void remember();
  void recall(int step);  // up (-1) or down (+1) through the history
  std::size_t char_before(std::size_t at) const;
  std::size_t char_after(std::size_t at) const;

  std::string line_;
  std::size_t cursor_ = 0;  // a byte offset in line_, at a character's start
  std::string escape_;      // an escape sequence read so far
  std::vector<std::string> history_;
  std::size_t recalled_ = 0;  // history_.size() when no earlier line is shown
  std::string typed_;         // the line being typed when up was first pressed
};

}  // namespace moat::agent
