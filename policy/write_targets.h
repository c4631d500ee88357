// policy/write_targets.h: the paths a program writes through its operands and options
// (POLICY.md bypass class 12): tee, rm, cp/mv/ln/install (-t, into a directory), dd of=,
// sort -o, tar -x/-C/-f, unzip -d, patch, sed -i and sed scripts' w/e commands, rsync,
// git -C/clone/init/--output. Each becomes a path-write check like a redirection target.
#pragma once

#include <string>
#include <vector>

#include "policy/command_unit.h"

namespace moat::policy {

struct OperandWrite {
  Arg path;
  bool below = false;  // some path at or below `path` (which one is not known: tar -x -C DIR)
  std::string via;     // "operand of tee", "sort -o", "tar -x -C" ...
};

// `u` has normalised flags and operands. What cannot be judged statically (sed's `e`
// command, a sed script in a file or behind an expansion) is appended to `problems`.
std::vector<OperandWrite> operand_writes(const CommandUnit& u, std::vector<std::string>& problems);

}  // namespace moat::policy
