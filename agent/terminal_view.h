// agent/terminal_view.h: the terminal view of `moat run` (docs/events.md, "The terminal"),
// drawn by the console from the loop's events: the model's text as it streams; each call
// live while it runs (a spinner, its time, the last lines of its output) and folded to a few
// lines with its decision when it ends; a status line after each answer (tokens by bucket,
// cost so far, cache hit). Every string from an event passes visible() (agent/visible.h):
// only the view's own cursor moves reach the terminal.
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "agent/slash_commands.h"
#include "agent/visible.h"

namespace moat::agent {

class TerminalView {
 public:
  // `live`: stderr is a terminal, so the running calls are redrawn in place; otherwise each
  // call is shown when it starts and when it ends, and nothing is redrawn.
  TerminalView(FILE* out, FILE* err, bool live) : out_(out), err_(err), live_(live) {}

  // The loop's stdout: JSON event lines (json_line), taken a whole line at a time.
  void feed(std::string_view bytes);
  void event(const nlohmann::json& e);
  // Redraws the running calls (their spinner and time) at most every 100 ms; the console
  // calls it while it waits.
  void tick();
  // Around anything else written to the terminal (a question, the loop's stderr): the
  // running calls are taken off the screen, then drawn again below it; a word of the model's
  // held back for wrapping is written first.
  void erase();
  void draw();
  // A line the person typed: a command of the view's (agent/slash_commands.h: /cost, /diff,
  // /policy, /model or /mcp, alone on the line) is answered from the events seen so far and returns
  // true; any other line is not the view's. /diff
  // shows each changed file with the unified diff its edit (or a write creating it) made;
  // for a file a command changed, or a write replaced, it says the contents are not tracked.
  bool command(const std::string& line);

  // A terminal session (agent/terminal_repl.h): the loop serves prompts one after another,
  // as with --rpc; the view shows a prompt whenever no turn runs, and a summary at the end.
  void set_repl() { repl_ = true; }
  // The console sent a prompt or a compaction: a turn runs until its result (or response).
  void started() { busy_ = true; }
  bool busy() const { return busy_; }
  // A line of the console's own (help, an answer to a command), controls made visible.
  void say(const std::string& s) { line(s); }
  // The loop has ended: a terminal session's summary (its records, how to go on).
  void ended();
  // "> ", where the next prompt is typed.
  void show_prompt();

 private:
  struct Running {
    std::string id, tool, summary;
    std::chrono::steady_clock::time_point started;
    std::string tail;     // the last bytes of its output
    std::string decided;  // moatd's decision, once it came ("allow (default.make)")
    // The call's arguments: which file an edit or a write is about.
    nlohmann::json arguments;
  };
  struct Change {
    std::string what;  // "op path"
    std::string diff;  // its unified diff, or why there is none
  };
  void text(const std::string& t);
  void take_block_off();  // the running calls' lines, off the screen
  void end_line();
  void line(const std::string& s);  // a status line on stderr, below the model's text
  void call_started(const nlohmann::json& e);
  void call_output(const nlohmann::json& e);
  void call_decided(const nlohmann::json& e);
  void call_ended(const nlohmann::json& e);
  void note_changes(const nlohmann::json& e, const nlohmann::json& arguments);
  std::string diff_text() const;
  std::string cost_text() const;
  std::string mcp_text() const;
  void mcp_changed(const nlohmann::json& e);
  std::string answer(Slash command) const;
  void answered(const nlohmann::json& e);
  void responded(const nlohmann::json& e);
  void turn_over(const nlohmann::json& result);

  FILE* out_;
  FILE* err_;
  const bool live_;
  std::string carry_;  // a line of the loop's not yet ended
  bool mid_line_ = false;
  Wrapper wrap_;  // the model's text, wrapped at the terminal's width
  std::vector<Running> running_;
  int drawn_ = 0;  // lines of the live block on the screen, above the cursor
  unsigned frame_ = 0;
  nlohmann::json session_ = nlohmann::json::object();  // the session event
  nlohmann::json totals_ = nlohmann::json::object();   // the last answer's totals
  std::vector<Change> changed_;                        // per call and file, in order
  std::chrono::steady_clock::time_point last_tick_{};
  bool repl_ = false;
  bool busy_ = false;
  std::string said_;  // the last error event's message: the turn's result does not repeat it
};

}  // namespace moat::agent
