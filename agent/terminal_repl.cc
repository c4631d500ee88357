// agent/terminal_repl.cc: a typed line at the terminal (terminal_repl.h).
#include "agent/terminal_repl.h"

#include <cctype>

#include "agent/events.h"
#include "agent/rpc_session.h"

namespace moat::agent {
namespace {

using nlohmann::json;

// "/word rest": the word (letters only, so "/usr/bin is wrong" stays a sentence) and the rest.
bool split_command(const std::string& line, std::string& word, std::string& rest) {
  if (line.empty() || line[0] != '/') return false;
  std::size_t end = 1;
  while (end < line.size() && std::isalpha(static_cast<unsigned char>(line[end]))) ++end;
  if (end == 1 || (end < line.size() && line[end] != ' ' && line[end] != '\t')) return false;
  word = line.substr(1, end - 1);
  const std::size_t from = line.find_first_not_of(" \t", end);
  rest = from == std::string::npos ? "" : line.substr(from);
  return true;
}

std::string trimmed(const std::string& s) {
  const std::size_t a = s.find_first_not_of(" \t\r"), b = s.find_last_not_of(" \t\r");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

}  // namespace

std::string repl_help() {
  return "moat: between turns a line is the next prompt; while the agent works it steers it\n"
         "  /tree                  the session's entries (* the path the next prompt continues)\n"
         "  /fork [ENTRY]          the next prompt goes on from ENTRY (an id, a prefix or a "
         "label; none: from before the last prompt), a new branch\n"
         "  /compact [TEXT]        summarise the context now (TEXT: what the summary keeps)\n"
         "  /cost /diff /policy /model   the session's cost, changed files, policy, model\n"
         "  /help                  this list\n"
         "  /exit, /quit, Ctrl-D   end the session (Ctrl-C: cancel the turn; at the prompt, twice)";
}

TypedLine read_typed_line(const std::string& typed, bool running) {
  const std::string line = trimmed(typed);
  TypedLine t;
  if (line.empty()) return t;
  std::string word, rest;
  if (!split_command(line, word, rest)) {
    t.kind = TypedLine::Kind::kLoop;
    t.command = {{"type", running ? "steer" : "prompt"}, {"message", line}};
    return t;
  }
  t.kind = TypedLine::Kind::kLoop;
  if (word == "tree") {
    t.command = {{"type", "get_tree"}};
  } else if (word == "fork") {
    t.command = {{"type", "fork"}};
    if (!rest.empty()) t.command["entry"] = rest;
  } else if (word == "compact") {
    t.command = {{"type", "compact"}};
    if (!rest.empty()) t.command["instructions"] = rest;
  } else if ((word == "exit" || word == "quit") && rest.empty()) {
    t.kind = TypedLine::Kind::kEnd;
  } else {
    t.kind = TypedLine::Kind::kSay;
    t.text = (word == "help" ? "" : "moat: unknown command /" + word + "\n") + repl_help();
  }
  return t;
}

std::string LoopCommands::next(const json& command) {
  std::string line = json_line(command);
  return rpc_forward_line(++line_, line);
}

}  // namespace moat::agent
