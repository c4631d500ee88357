// agent/console_modes.h: the console's front end for each mode (agent/run_mode.h), chosen once.
#pragma once

#include <memory>
#include <string>

#include "agent/console_front_end.h"
#include "agent/run_mode.h"

namespace moat::agent {

// kPrint, kJson: the plain front end. stdin is not read; the loop's stdout is passed on with
// its controls made visible (agent/visible.h); a question of moatd's is declined (nobody is
// asked). kRpc: agent/rpc_console.h on stdout. kLines, kTerminal: the terminal front end
// (agent/console_terminal.h), whose session (kTerminal) starts with `first_prompt` when it is
// not empty.
std::unique_ptr<ConsoleFrontEnd> make_console_front_end(RunMode mode, ConsoleLink& link,
                                                        const std::string& first_prompt);

}  // namespace moat::agent
