// agent/terminal_repl.h: what a line typed at moat's terminal becomes (docs/events.md, "The
// terminal"). The loop serves a terminal session as it serves `--rpc` (agent/rpc_session.h):
// between turns a line is the next prompt, during one it steers; a /word is read against the
// one table of commands (agent/slash_commands.h): the loop's become its commands, /exit and
// /quit end the session, /help and an unknown /word list the commands. (The view's, /cost,
// /diff, /policy and /model, the view answers: agent/terminal_view.h.)
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

namespace moat::agent {

struct TypedLine {
  enum class Kind {
    kNothing,  // a blank line
    kLoop,     // `command` goes to the loop
    kSay,      // `text` is the answer (help, an unknown command), said by the view
    kEnd,      // the person ends the session
  };
  Kind kind = Kind::kNothing;
  nlohmann::json command;  // an RPC command (agent/rpc.h)
  std::string text;
};

// `running`: a turn (or a compaction) is under way.
TypedLine read_typed_line(const std::string& line, bool running);

// Numbers the commands the console hands the loop (agent/rpc_session.h reads them).
class LoopCommands {
 public:
  // The line for the loop's input: its number, the command as a JSON line, LF.
  std::string next(const nlohmann::json& command);

 private:
  std::uint64_t line_ = 0;
};

}  // namespace moat::agent
