// tests/unit/agent/run_mode_test.cc: `moat run`'s mode from its flags and terminals
// (agent/run_mode.h), one row per case docs/events.md names.
#include "agent/run_mode.h"

#include <gtest/gtest.h>

namespace moat::agent {
namespace {

struct Row {
  const char* what;
  RunModeInputs in;
  RunMode mode;
};

// in: headless, interactive, print, json, rpc, stdin_tty, stdout_tty.
const Row kRows[] = {
    {"a terminal, no flags", {false, false, false, false, false, true, true}, RunMode::kTerminal},
    {"stdin a terminal, stdout a pipe", {false, false, false, false, false, true, false},
     RunMode::kLines},
    {"stdin a pipe", {false, false, false, false, false, false, true}, RunMode::kPrint},
    {"nothing a terminal", {false, false, false, false, false, false, false}, RunMode::kPrint},
    {"--headless at a terminal", {true, false, false, false, false, true, true}, RunMode::kPrint},
    {"-p at a terminal", {false, false, true, false, false, true, true}, RunMode::kPrint},
    {"--json at a terminal", {false, false, false, true, false, true, true}, RunMode::kJson},
    {"--json on pipes", {false, false, false, true, false, false, false}, RunMode::kJson},
    {"--interactive on pipes", {false, true, false, false, false, false, false}, RunMode::kLines},
    {"--interactive at a terminal", {false, true, false, false, false, true, true},
     RunMode::kTerminal},
    {"--interactive --json on pipes", {false, true, false, true, false, false, false},
     RunMode::kLines},
    {"--rpc on pipes", {false, false, false, false, true, false, false}, RunMode::kRpc},
    {"--rpc at a terminal", {false, false, false, false, true, true, true}, RunMode::kRpc},
};

TEST(RunMode, EachRowOfFlagsAndTerminalsDecidesOneMode) {
  for (const Row& r : kRows)
    EXPECT_EQ(static_cast<int>(decide_run_mode(r.in)), static_cast<int>(r.mode)) << r.what;
}

TEST(RunMode, OnlyPrintAndJsonAreHeadlessAndOnlyTheTerminalAndRpcServePrompts) {
  EXPECT_TRUE(is_headless(RunMode::kPrint));
  EXPECT_TRUE(is_headless(RunMode::kJson));
  EXPECT_FALSE(is_headless(RunMode::kLines));
  EXPECT_FALSE(is_headless(RunMode::kTerminal));
  EXPECT_FALSE(is_headless(RunMode::kRpc));
  EXPECT_TRUE(serves_prompts(RunMode::kTerminal));
  EXPECT_TRUE(serves_prompts(RunMode::kRpc));
  EXPECT_FALSE(serves_prompts(RunMode::kLines));
  EXPECT_TRUE(is_typed(RunMode::kLines) && is_typed(RunMode::kTerminal));
  EXPECT_FALSE(is_typed(RunMode::kRpc) || is_typed(RunMode::kJson));
  EXPECT_FALSE(loop_writes_json(RunMode::kPrint));
}

}  // namespace
}  // namespace moat::agent
