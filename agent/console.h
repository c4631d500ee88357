// agent/console.h: `moat run`'s console: the trusted process that keeps the terminal and the
// person's channel to moatd, while the unprivileged loop runs in a child that holds neither
// (docs/security.md, "The person's answers").
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "agent/console_front_end.h"
#include "agent/run_mode.h"
#include "base/result.h"
#include "base/unique_fd.h"

namespace moat::agent {

struct ConsoleOptions {
  UniqueFd channel;  // the session's console channel to moatd; invalid: nobody is asked
  // Headless: nobody is asked. Typed lines (kLines, kTerminal) answer moatd's questions and
  // steer the loop, whose JSON events the console draws (agent/terminal_view.h); in a terminal
  // session they become the loop's commands, as --rpc's (agent/terminal_repl.h). --rpc: stdin
  // carries commands (agent/rpc_console.h).
  RunMode mode = RunMode::kPrint;
  std::string first_prompt;  // a terminal session's first prompt (when not empty)
  pid_t moatd_pid = -1;      // a private moatd, reaped after the loop (it writes session.end)
  std::vector<int> loop_only_fds;  // closed in the console: the loop's alone (its moatd socket)
};

// Forks; call it while the process has one thread. In the child, the loop, it returns: the
// child is a session leader with no controlling terminal, its stdin, stdout and stderr are
// pipes to the console (stdin is /dev/null unless interactive), and it holds no fd of a
// terminal and not the console channel. The parent, the console, never returns: not
// dumpable (a loop of the same uid can neither ptrace it nor open its /proc/<pid>/mem), it
// renders the loop's output through visible() (agent/visible.h), shows moatd's questions and sends
// the answers, passes other typed lines to the loop, forwards SIGINT (cancel) and SIGTERM/SIGHUP to
// the loop, and once the loop has exited and the private moatd has finished (session.end written),
// exits with the loop's status.
Result<void> split_console_and_loop(ConsoleOptions options);

// The console's fds after the split, and the front end it serves (console_front_end.h).
struct ConsoleWires {
  pid_t loop = -1;
  int input = STDIN_FILENO;  // the person's or the client's input
  UniqueFd to_loop;          // the loop's stdin (invalid: nothing is written to it)
  UniqueFd loop_out, loop_err;
  UniqueFd channel;  // moatd's console channel (invalid: nobody is asked)
  UniqueFd signals;  // the console's signals, a byte each (invalid: none are seen)
};
using FrontEndMaker = std::function<std::unique_ptr<ConsoleFrontEnd>(ConsoleLink&)>;

// Serves the front end `make` builds until the loop has exited (its output all handed on);
// returns the loop's wait status. split_console_and_loop serves the mode's front end
// (agent/console_modes.h) with it.
int serve_console(ConsoleWires wires, const FrontEndMaker& make);

// The loop's half, after its privilege drop (a credential change clears the parent-death
// signal): the loop dies with the console, so a killed console never leaves it running.
Result<void> die_with_console();

}  // namespace moat::agent
