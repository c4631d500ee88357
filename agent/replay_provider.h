// agent/replay_provider.h: `--model replay:FILE`: a provider that plays recorded model turns
// from a JSONL script, so the quick start, the demo and tests need no API key.
//
// One model turn per line (blank lines and lines starting with '#' are skipped):
//   {"text": "...", "reasoning": "...",
//    "tool_calls": [{"id": "optional", "name": "bash", "arguments": {"command": "ls"}}],
//    "stop_reason": "stop" | "length" | "toolUse",      (default: toolUse if calls, else stop)
//    "usage": {"input": N, "output": N, "cacheRead": N, "cacheWrite": N}}
#pragma once

#include <memory>
#include <string>

#include "agent/provider.h"
#include "base/result.h"

namespace moat::agent {

// Reads and validates the whole script now (errors name FILE:LINE:COL and what is
// accepted), so a bad script fails before any sandbox is set up.
Result<std::unique_ptr<Provider>> make_replay_provider(const std::string& path);

}  // namespace moat::agent
