// agent/cli_run.cc: `moat run`: the agent loop against a provider, tools run by moatd.
#include "agent/cli.h"

namespace moat::agent {

void add_run_command(CLI::App& app, int& /*exit_code*/) {
  app.add_subcommand("run", "Run the agent on a task");
}

}  // namespace moat::agent
