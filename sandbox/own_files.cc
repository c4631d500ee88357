// sandbox/own_files.cc: which of moat's own files a session's workspace holds (see the header).
#include "sandbox/own_files.h"

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <string>
#include <vector>

#include "base/moat_dirs.h"
#include "policy/paths.h"
#include "sessions/audit_key.h"

namespace moat::sandbox {
namespace {

// The home directory of `uid` in the passwd database, "" if it has none.
std::string home_of(uid_t uid) {
  struct passwd pw {};
  struct passwd* found = nullptr;
  std::vector<char> buf(16384);
  if (::getpwuid_r(uid, &pw, buf.data(), buf.size(), &found) != 0 || found == nullptr ||
      pw.pw_dir == nullptr || pw.pw_dir[0] != '/')
    return "";
  return pw.pw_dir;
}

std::string current_dir() {
  char cwd[PATH_MAX];
  return ::getcwd(cwd, sizeof cwd) != nullptr ? std::string(cwd) : std::string("/");
}

// Files and directories under a home directory that run code as the person (shells' startup
// files, git's and npm's configuration, ssh's, PATH directories, autostart and user units).
constexpr const char* kHomeStartup[] = {".bashrc",
                                        ".bash_profile",
                                        ".bash_login",
                                        ".bash_logout",
                                        ".profile",
                                        ".zshrc",
                                        ".zshenv",
                                        ".zprofile",
                                        ".zlogin",
                                        ".zlogout",
                                        ".config/fish",
                                        ".gitconfig",
                                        ".config/git",
                                        ".ssh",
                                        ".npmrc",
                                        ".local/bin",
                                        "bin",
                                        ".cargo/bin",
                                        ".cargo/config.toml",
                                        ".config/autostart",
                                        ".config/systemd",
                                        ".config/environment.d",
                                        ".pam_environment",
                                        ".xprofile",
                                        ".xsessionrc",
                                        ".vimrc",
                                        ".vim",
                                        ".config/nvim",
                                        ".emacs",
                                        ".emacs.d",
                                        ".tmux.conf",
                                        ".config/direnv",
                                        ".Rprofile"};

}  // namespace

std::string audit_key_path(const SupervisorOptions& o) {
  return o.audit_key.empty() ? o.audit_dir + "/audit-key.pem" : o.audit_key;
}

OwnFiles own_files(const SupervisorOptions& o, uid_t peer_uid) {
  OwnFiles own;
  const std::string key = audit_key_path(o);
  own.read_only = {
      dirs::config(), o.policy.user_dir.empty() ? dirs::user_policy() : o.policy.user_dir,
      o.policy.system_dir, o.policy.trust_dir.empty() ? dirs::trust() : o.policy.trust_dir,
      dirs::state(), o.sessions_dir.empty() ? dirs::sessions() : o.sessions_dir, o.audit_dir,
      // The public half: replacing it would vouch for a forged log.
      sessions::audit_public_key_path(key)};
  own.hidden = {key};
  std::string home;
  if (peer_uid != ::geteuid()) {
    home = home_of(peer_uid);
    if (!home.empty()) {
      own.read_only.push_back(home + "/.config/moat");
      own.read_only.push_back(home + "/.local/state/moat");
    }
  } else if (const char* h = std::getenv("HOME"); h != nullptr && h[0] == '/') {
    home = h;
  } else {
    home = home_of(peer_uid);
  }
  // Apart: a missing one would need a placeholder made in the person's home to be masked.
  struct stat st {};
  if (!home.empty())
    for (const char* rel : kHomeStartup)
      (::lstat((home + "/" + rel).c_str(), &st) == 0 ? own.home_startup
                                                     : own.home_startup_missing)
          .push_back(home + "/" + rel);
  return own;
}

Result<void> protect_own_files(const OwnFiles& own, const std::string& workspace,
                               std::vector<std::string>* protected_paths,
                               std::vector<std::string>* hidden_paths,
                               std::vector<std::string>* if_present) {
  const std::string cwd = current_dir();
  // The ~40 paths share their home and moat's directories: realpath(3) of each read the
  // same components again (0.2 ms of the hello's CPU, issue 30 point 4). One cache for this
  // hello only, so a symlink swapped in before the next hello is seen by it.
  policy::PathCache paths;
  auto add = [&](const std::string& path, std::vector<std::string>* to,
                 bool refuse_inside = true) -> Result<void> {
    if (path.empty()) return {};
    // Where the path really is: a symlinked ~/.config inside the workspace counts.
    const std::string real = paths.canonical(path, cwd);
    if (refuse_inside && policy::is_under(workspace, real))
      return fail(Error{EPERM, "the workspace " + workspace + " is inside " + real +
                                   ", one of moat's own directories, which no sandbox may write"});
    // The workspace itself (-C ~/.config/nvim) is the person's choice to let the code edit it.
    if (policy::is_under(real, workspace) && real != workspace)
      to->push_back(real.substr(workspace == "/" ? 1 : workspace.size() + 1));
    return {};
  };
  for (const std::string& p : own.read_only) MOAT_TRY(add(p, protected_paths));
  for (const std::string& p : own.hidden) MOAT_TRY(add(p, hidden_paths));
  for (const std::string& p : own.home_startup) MOAT_TRY(add(p, protected_paths, false));
  for (const std::string& p : own.home_startup_missing) MOAT_TRY(add(p, if_present, false));
  return {};
}

}  // namespace moat::sandbox
