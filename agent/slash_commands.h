// agent/slash_commands.h: the one table of the commands a person types at moat's terminal
// ("/word"), whose they are (the loop's, the view's or the console's) and their help line
// (docs/events.md, "The terminal"). terminal_repl.h turns a typed line into what it asks;
// terminal_view.h answers the view's from the events it has seen.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace moat::agent {

enum class Slash {
  kTree, kFork, kCompact, kCost, kDiff, kPolicy, kModel, kMcp, kHelp, kExit, kQuit };

enum class SlashOwner {
  kLoop,     // an RPC command for the loop (agent/rpc_session.h)
  kView,     // answered by the view from the events seen so far (agent/terminal_view.h)
  kConsole,  // the console's own: the help, the end of the session
};

struct SlashCommand {
  std::string_view word;  // without its '/'
  Slash id;
  SlashOwner owner;
  bool takes_rest;         // words after it are its argument (or ignored); else it stands alone
  std::string_view usage;  // its line in the help; "" when an earlier row's usage names it
  std::string_view help;
  // The loop's: the RPC command it becomes (agent/rpc.h), and the field its rest goes in.
  std::string_view rpc_type = {};
  std::string_view rpc_field = {};
};

inline constexpr SlashCommand kSlashCommands[] = {
    {"tree", Slash::kTree, SlashOwner::kLoop, true, "/tree",
     "the session's entries (* the path the next prompt continues)", "get_tree"},
    {"fork", Slash::kFork, SlashOwner::kLoop, true, "/fork [ENTRY]",
     "the next prompt goes on from ENTRY (an id, a prefix or a label; none: from before the "
     "last prompt), a new branch",
     "fork", "entry"},
    {"compact", Slash::kCompact, SlashOwner::kLoop, true, "/compact [TEXT]",
     "summarise the context now (TEXT: what the summary keeps)", "compact", "instructions"},
    {"cost", Slash::kCost, SlashOwner::kView, false, "/cost /diff /policy /model",
     "the session's cost, changed files, policy, model"},
    {"diff", Slash::kDiff, SlashOwner::kView, false, "", ""},
    {"policy", Slash::kPolicy, SlashOwner::kView, false, "", ""},
    {"model", Slash::kModel, SlashOwner::kView, false, "", ""},
    {"mcp", Slash::kMcp, SlashOwner::kView, false, "/mcp",
     "the session's MCP servers: state, log, and each tool with its decision"},
    {"help", Slash::kHelp, SlashOwner::kConsole, true, "/help", "this list"},
    {"exit", Slash::kExit, SlashOwner::kConsole, false, "/exit, /quit, Ctrl-D",
     "end the session (Ctrl-C: cancel the turn; at the prompt, twice)"},
    {"quit", Slash::kQuit, SlashOwner::kConsole, false, "", ""},
};

// A line that starts "/word" (letters only, so "/usr/bin is wrong" stays a sentence), blanks
// around it dropped: its row (null for a word not in the table), the word and the rest.
struct SlashLine {
  const SlashCommand* command = nullptr;
  std::string word;
  std::string rest;
};
std::optional<SlashLine> read_slash(std::string_view line);

// The commands, one line each, for /help and an unknown command.
std::string slash_help();

}  // namespace moat::agent
