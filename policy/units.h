// policy/units.h: a shell line to the command units the matcher judges: parsed, wrappers
// unwrapped by option spec, sh -c scripts parsed recursively, flags normalised, and write
// targets (redirections, write operands) collected.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "policy/command_unit.h"
#include "policy/paths.h"

namespace moat::policy {

struct LinePlan {
  std::vector<CommandUnit> units;
  std::vector<std::string> problems;  // line-level: syntax, limits, control characters
};

// `home` expands ~ and $HOME in write targets and script paths. `paths`, if given, is the
// decision's canonicalisation cache (for `cd` targets).
LinePlan plan_line(std::string_view line, const std::string& cwd, const std::string& home,
                   PathCache* paths = nullptr);

// Normalises flags and finds operands of argv[1..]; used for units and for tests.
void normalise_flags(CommandUnit& unit);

}  // namespace moat::policy
