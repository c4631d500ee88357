// agent/terminal_relay.h: `moat sandbox exec` at a terminal. The command never gets the
// person's terminal itself: it gets a fresh pseudo-terminal whose slave stands in for each of
// fds 0-2 that is a terminal, and this process relays bytes between the real terminal (in raw
// mode, so Ctrl-C, Ctrl-Z and Ctrl-\ reach the pty's line discipline, which signals the
// command's foreground group) and the pty's master, as ssh and script(1) do. The command's
// output is filtered on its way (agent/terminal_filter.h); a pipe or file among fds 0-2 is the
// command's own, and its bytes stay exact.
// docs/security.md, "moat sandbox exec".
#pragma once

#include <termios.h>

#include <atomic>
#include <memory>
#include <thread>

#include "agent/terminal_filter.h"
#include "base/result.h"
#include "base/unique_fd.h"

namespace moat::agent {

class TerminalRelay {
 public:
  // A relay when one of fds 0-2 is a terminal (the pty gets its size and modes), else null.
  static Result<std::unique_ptr<TerminalRelay>> open_if_terminal();
  ~TerminalRelay() { finish(); }

  // What the command gets as fds 0-2: the pty's slave in place of each terminal.
  void stdio(int (&fds)[3]) const;
  // Puts the terminal in raw mode and starts relaying.
  Result<void> start();
  // The command ended: lets go of the slave, relays what the pty still holds until it hangs
  // up (or 2 s pass), restores the terminal's modes. Idempotent.
  void finish();

 private:
  TerminalRelay() = default;
  void relay();
  void copy_size();

  UniqueFd master_, slave_;
  bool is_tty_[3] = {false, false, false};
  int out_fd_ = -1;  // where the pty's output goes: the first of stdout, stderr at a terminal
  // What the command prints passes this on its way to the person's terminal: no sequence
  // that answers into the terminal's input, sets its title or clipboard, or opens a link.
  TerminalFilter filter_;
  termios saved_{};
  bool raw_ = false;
  UniqueFd wake_[2];  // finish() writes to wake_[1]
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace moat::agent
