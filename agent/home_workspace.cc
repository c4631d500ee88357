// agent/home_workspace.cc: the warning for a workspace at or above the home (home_workspace.h).
#include "agent/home_workspace.h"

#include "base/log.h"
#include "base/moat_dirs.h"
#include "base/workspace_path.h"

namespace moat::agent {

std::string home_workspace_risk(const std::string& workspace) {
  const std::string given = dirs::home();
  const auto resolved = real_path(given);
  const std::string home = resolved ? *resolved : given;
  const bool above = workspace != home && (workspace == "/" || home.starts_with(workspace + "/"));
  if (workspace != home && !above) return {};
  return "workspace " + moat::quoted(workspace) + (above ? " contains" : " is") +
         " the home directory " + moat::quoted(home) +
         ": commands in the sandbox can change everything under it but the startup files "
         "moat masks (shells', git's, ssh's, the program directories): your other projects "
         "and their .git/config, your documents, the rest of ~/.config";
}

}  // namespace moat::agent
