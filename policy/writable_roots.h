// policy/writable_roots.h: the directories sandboxed code can write, written once for the
// policy (which never trusts a program there by name, and denies a redirection outside them)
// and for Landlock (which grants writes only beneath them).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace moat::policy {

// Besides the workspace and the writable --bind targets. /var/tmp is not in the sandbox's
// default view (Landlock skips a root the view lacks) and a --ro-bind of it stays read-only
// by its mount; the policy still counts it, so a program found there is never trusted by name.
inline constexpr std::string_view kSystemWritableRoots[] = {"/tmp", "/var/tmp", "/dev/shm"};

// The workspace (when there is one) and then kSystemWritableRoots; callers append their
// writable --bind targets.
inline std::vector<std::string> writable_roots(const std::string& workspace) {
  std::vector<std::string> roots;
  if (!workspace.empty()) roots.push_back(workspace);
  for (std::string_view r : kSystemWritableRoots) roots.emplace_back(r);
  return roots;
}

}  // namespace moat::policy
