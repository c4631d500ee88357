// agent/run_mode.cc: the mode of a `moat run`, decided once (run_mode.h).
#include "agent/run_mode.h"

namespace moat::agent {

RunMode decide_run_mode(const RunModeInputs& in) {
  if (in.rpc) return RunMode::kRpc;
  const bool headless =
      !in.interactive && (in.headless || in.print || in.json || !in.stdin_tty);
  if (headless) return in.json ? RunMode::kJson : RunMode::kPrint;
  return in.stdin_tty && in.stdout_tty ? RunMode::kTerminal : RunMode::kLines;
}

}  // namespace moat::agent
