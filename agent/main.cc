// agent/main.cc: the `moat` command line.
#include <CLI/CLI.hpp>

#include <cstdio>

#include "agent/cli.h"

namespace {}  // namespace

int main(int argc, char** argv) {
  using namespace moat::agent;
  CLI::App app{"moat: a coding agent for code nobody trusts"};
  app.footer("Exit codes (each command's --help lists the ones it can return):\n" +
             exit_codes_text("  ", "  ", "\n"));
  app.require_subcommand(1);
  int exit_code = kExitDone;

  auto* version = app.add_subcommand("version", "Print moat's version");
  set_exit_codes(*version, {kExitDone, kExitUsage});
  version->callback([] { std::printf("moat %s\n", MOAT_VERSION); });

  add_run_command(app, exit_code);
  add_sandbox_commands(app, exit_code);
  add_policy_commands(app, exit_code);
  add_sessions_commands(app, exit_code);
  add_provider_commands(app, exit_code);
  add_batch_command(app, exit_code);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : parse_error_exit_code(app);
  }
  return exit_code;
}
