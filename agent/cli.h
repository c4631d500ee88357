// agent/cli.h: the `moat` command line: one registration function per command group.
#pragma once

#include <CLI/CLI.hpp>

namespace moat::agent {

// Exit codes of `moat`, documented in `moat --help` and the README.
enum ExitCode : int {
  kExitDone = 0,           // the task is done
  kExitTaskFailed = 1,     // the task failed or a gate stopped it
  kExitUsage = 2,          // usage or configuration error
  kExitSandbox = 3,        // the sandbox could not be set up
  kExitProvider = 4,       // the model provider failed
};

// Each add_* registers its subcommands on `app`. A subcommand's callback stores its exit
// code in `exit_code` (CLI11 callbacks return void).
void add_run_command(CLI::App& app, int& exit_code);        // run
void add_sandbox_commands(CLI::App& app, int& exit_code);   // sandbox exec|explain-filter, doctor
void add_policy_commands(CLI::App& app, int& exit_code);    // policy lint|test|list|explain
void add_sessions_commands(CLI::App& app, int& exit_code);  // sessions ..., audit ...
void add_provider_commands(CLI::App& app, int& exit_code);  // provider parse, prompt show

}  // namespace moat::agent
