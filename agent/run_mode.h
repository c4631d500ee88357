// agent/run_mode.h: who answers moatd's questions in a `moat run` and what its streams carry,
// decided once from the flags and the terminals (docs/events.md). Every later step asks the
// mode, never the flags again.
#pragma once

namespace moat::agent {

enum class RunMode {
  kPrint,     // headless, text: progress on stderr, the final answer alone on stdout
  kJson,      // headless, one JSON event per line on stdout
  kLines,     // a person or a script answers on stdin; other lines steer (no terminal session)
  kTerminal,  // stdin and stdout are a terminal: prompts one after another (terminal_repl.h)
  kRpc,       // commands as JSON lines on stdin, events on stdout (rpc.h)
};

// The flags of `moat run` that choose the mode, and whether stdin and stdout are terminals.
struct RunModeInputs {
  bool headless = false;     // --headless
  bool interactive = false;  // --interactive
  bool print = false;        // -p, --print
  bool json = false;         // --json
  bool rpc = false;          // --rpc
  bool stdin_tty = false;
  bool stdout_tty = false;
};

// --rpc wins; --interactive asks a person whatever the terminals; --headless, -p, --json or a
// stdin that is not a terminal make a headless run; otherwise a terminal session when stdout
// is a terminal too, else typed lines.
RunMode decide_run_mode(const RunModeInputs& in);

// Nobody is asked: an `ask` decision is a deny.
constexpr bool is_headless(RunMode m) { return m == RunMode::kPrint || m == RunMode::kJson; }
// The loop serves prompts one after another on its stdin (agent/rpc_session.h).
constexpr bool serves_prompts(RunMode m) { return m == RunMode::kTerminal || m == RunMode::kRpc; }
// stdin is typed lines (a person's or a script's): they answer moatd's questions and steer or
// prompt the loop, and the console draws the loop's events for them (agent/terminal_view.h).
constexpr bool is_typed(RunMode m) { return m == RunMode::kLines || m == RunMode::kTerminal; }
// The loop writes JSON events on stdout (text only with -p).
constexpr bool loop_writes_json(RunMode m) { return m != RunMode::kPrint; }

}  // namespace moat::agent
