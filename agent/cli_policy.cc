// agent/cli_policy.cc: `moat policy lint|test|list|explain`.
#include "agent/cli.h"

namespace moat::agent {

void add_policy_commands(CLI::App& app, int& /*exit_code*/) {
  app.add_subcommand("policy", "Check, test and explain policies");
}

}  // namespace moat::agent
