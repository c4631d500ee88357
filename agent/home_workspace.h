// agent/home_workspace.h: a workspace at or above the person's home (issue 27 item 13).
#pragma once

#include <string>

namespace moat::agent {

// A workspace that is the person's home directory or above it (`-C ~`, `-C /`, `-C /home`)
// puts everything under the home in the sandbox's reach. The text of the warning, naming the
// workspace, the home and what is at risk; "" for any other workspace. `workspace` is
// canonical (canonical_workspace); the home is $HOME, resolved.
std::string home_workspace_risk(const std::string& workspace);

}  // namespace moat::agent
