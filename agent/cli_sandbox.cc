// agent/cli_sandbox.cc: `moat sandbox exec`, `moat sandbox explain-filter`, `moat doctor`.
#include "agent/cli.h"

namespace moat::agent {

void add_sandbox_commands(CLI::App& app, int& /*exit_code*/) {
  app.add_subcommand("sandbox", "Run commands in the sandbox and inspect it");
}

}  // namespace moat::agent
