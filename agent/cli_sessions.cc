// agent/cli_sessions.cc: `moat sessions ...` and `moat audit ...`.
#include "agent/cli.h"

namespace moat::agent {

void add_sessions_commands(CLI::App& app, int& /*exit_code*/) {
  app.add_subcommand("sessions", "List, show and export sessions");
  app.add_subcommand("audit", "Verify, show and export audit logs");
}

}  // namespace moat::agent
