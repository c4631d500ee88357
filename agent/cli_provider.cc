// agent/cli_provider.cc: `moat provider parse` and `moat prompt show`.
#include "agent/cli.h"

namespace moat::agent {

void add_provider_commands(CLI::App& app, int& /*exit_code*/) {
  app.add_subcommand("provider", "Replay recorded provider streams through the parser");
}

}  // namespace moat::agent
