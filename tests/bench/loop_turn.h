// tests/bench/loop_turn.h: a turn of `moat run` end to end against the mock, next to its parts
// measured in the same run (issue 19, item 2). See loop_turn.cc.
#pragma once

namespace moat::bench {

// Runs `rounds` scripted sessions, prints each round and the medians; 0 when every run worked.
int run_turn_bench(int rounds);

}  // namespace moat::bench
