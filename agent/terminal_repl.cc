// agent/terminal_repl.cc: a typed line at the terminal (terminal_repl.h).
#include "agent/terminal_repl.h"

#include "agent/events.h"
#include "agent/rpc_session.h"
#include "agent/slash_commands.h"

namespace moat::agent {
namespace {

using nlohmann::json;

std::string trimmed(const std::string& s) {
  const std::size_t a = s.find_first_not_of(" \t\r"), b = s.find_last_not_of(" \t\r");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

// A command of the loop's (agent/rpc.h), with its argument.
json loop_command(const SlashCommand& c, const std::string& rest) {
  json command = {{"type", c.rpc_type}};
  if (!c.rpc_field.empty() && !rest.empty()) command[std::string(c.rpc_field)] = rest;
  return command;
}

}  // namespace

TypedLine read_typed_line(const std::string& typed, bool running) {
  const std::string line = trimmed(typed);
  TypedLine t;
  if (line.empty()) return t;
  const std::optional<SlashLine> slash = read_slash(line);
  if (!slash) {
    t.kind = TypedLine::Kind::kLoop;
    t.command = {{"type", running ? "steer" : "prompt"}, {"message", line}};
    return t;
  }
  const SlashCommand* c = slash->command;
  if (c && c->owner == SlashOwner::kLoop) {
    t.kind = TypedLine::Kind::kLoop;
    t.command = loop_command(*c, slash->rest);
  } else if (c && (c->id == Slash::kExit || c->id == Slash::kQuit)) {
    t.kind = TypedLine::Kind::kEnd;
  } else {
    t.kind = TypedLine::Kind::kSay;
    const bool help = c && c->id == Slash::kHelp;
    t.text = (help ? "" : "moat: unknown command /" + slash->word + "\n") + slash_help();
  }
  return t;
}

std::string LoopCommands::next(const json& command) {
  std::string line = json_line(command);
  return rpc_forward_line(++line_, line);
}

}  // namespace moat::agent
