// sandbox/own_files.h: moat's own files (its config, policies, trust pins, state, sessions,
// audit logs and audit key), which no sandbox may change, wherever moatd's flags and
// environment put them.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "base/result.h"
#include "sandbox/supervisor_options.h"

namespace moat::sandbox {

struct OwnFiles {
  std::vector<std::string> read_only;  // host paths, directories or files
  std::vector<std::string> hidden;     // files whose content is secret (the audit key)
  // The user's startup files and program directories that exist (~/.bashrc, ~/.profile,
  // ~/.gitconfig, ~/.ssh, ~/.local/bin, ...): what the person's next shell, git or login runs.
  // Masked read-only like read_only, but a workspace inside one is not refused.
  std::vector<std::string> home_startup;
  // The same names that do not exist (a missing ~/.zshrc): not masked (a mask would need a
  // placeholder made in the person's home), but moatd removes one a call creates
  // (NestedGitWatch::sweep_created).
  std::vector<std::string> home_startup_missing;
};

// The key that signs the audit checkpoints: --audit-key, else <audit dir>/audit-key.pem.
std::string audit_key_path(const SupervisorOptions& options);

// This moatd's: config (config.toml says where the API key is sent), user and system policy
// directories, trust pins, state, sessions and audit directories and the audit key, each as
// moatd resolves it (its flags, else base/moat_dirs.h). For a peer that is not moatd's own
// user (a shared moatd), also that user's default config and state directories under the
// home directory the passwd database gives (moatd does not know the peer's environment).
OwnFiles own_files(const SupervisorOptions& options, uid_t peer_uid);

// Appends every own path that lies inside `workspace` (canonical) to the session's protected
// paths (masked read-only) or hidden paths (covered by an empty file), workspace-relative, so
// a workspace at or above the user's home cannot reach them. EPERM if the workspace is one of
// moat's own directories or lies inside one: the whole sandbox would write there.
// The home's missing startup names go to `if_present` (SessionConfig::protected_if_present).
Result<void> protect_own_files(const OwnFiles& own, const std::string& workspace,
                               std::vector<std::string>* protected_paths,
                               std::vector<std::string>* hidden_paths,
                               std::vector<std::string>* if_present);

}  // namespace moat::sandbox
