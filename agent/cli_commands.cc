// agent/cli_commands.cc: which command groups a command line needs (cli.h add_commands).
#include <string_view>

#include "agent/cli.h"

namespace moat::agent {
namespace {

// A command group and the one or two top-level words it registers.
struct CommandGroup {
  std::string_view word, other_word;
  void (*add)(CLI::App&, int&);
};

// Every group but completion's, whose script lists every command.
const CommandGroup kGroups[] = {
    {"run", "", add_run_command},
    {"sandbox", "doctor", add_sandbox_commands},
    {"policy", "", add_policy_commands},
    {"sessions", "audit", add_sessions_commands},
    {"provider", "prompt", add_provider_commands},
    {"batch", "", add_batch_command},
    {"mcp", "", add_mcp_commands},
};

const CommandGroup* group_of(std::string_view word) {
  if (word.empty()) return nullptr;
  for (const auto& g : kGroups)
    if (g.word == word || g.other_word == word) return &g;
  return nullptr;
}

}  // namespace

void add_commands(CLI::App& app, int& exit_code, std::string_view first_word) {
  if (const CommandGroup* only = group_of(first_word)) {
    only->add(app, exit_code);
    return;
  }
  for (const auto& g : kGroups) g.add(app, exit_code);
  add_completion_command(app, exit_code);
}

}  // namespace moat::agent
