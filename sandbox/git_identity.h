// sandbox/git_identity.h: the person's git identity (user.name, user.email), read on the host at
// hello from their global git config, so a commit inside the sandbox has an author (issue 27
// item 17): the sandbox's HOME is its private /tmp, where the host's ~/.gitconfig is not.
#pragma once

#include <chrono>
#include <cstdint>
#include <future>
#include <mutex>
#include <optional>
#include <string>
#include <sys/types.h>

#include "policy/parse_cache.h"

namespace moat::sandbox {

struct GitIdentity {
  std::string name;   // user.name, "" when unset
  std::string email;  // user.email, "" when unset
  bool operator==(const GitIdentity&) const = default;
};

// What stat(2) says of one file git's --global level reads, or, absent, of its nearest directory
// (the policy parse cache's stamp: policy/parse_cache.h).
struct ConfigFileStamp {
  bool present = false;
  policy::FileStamp stat;
  bool operator==(const ConfigFileStamp&) const = default;
};

// Reads the identity with one `git config --global -z --get-regexp` for user.name and user.email,
// in the working directory "/" with an environment of only HOME (and PATH), so no repository's
// config and nothing but the person's global files (~/.gitconfig, ~/.config/git/config: git
// sees no XDG_CONFIG_HOME) are read. Nothing else of them is taken. A value that git cannot
// give in 5 s, or holds a control character, is left out. The answer is kept for that HOME
// while both files' stamps stay the same (issue 30 point 4: git's spawn was ~2 ms of a
// resident hello); never while one includes another file (its stamp is not taken), nor until
// both settled: a write in the same timestamp tick as the one read would keep the stamp, so a
// file is kept only once its last change is older than its filesystem's granularity allows
// (`settle` for one that stamps finer than 1 ms, 3 s otherwise). When neither file exists git
// could give nothing: it is not run. With a `kept_file`, a kept answer is also written there
// (atomically, mode 0600) and read from there by the next process, whose stamps it must match:
// a private moatd serves one hello, so only a file spares its git (issue 30 point 4). That file
// is trusted for a name and an email only, and only when it is a regular file (O_NOFOLLOW) of
// this uid that no other user may write; a corrupt or foreign one is passed over. Thread-safe.
class GitIdentityReader {
 public:
  explicit GitIdentityReader(std::string git = "/usr/bin/git",
                             std::chrono::nanoseconds settle = policy::kSettledAfter,
                             std::string kept_file = "");
  GitIdentity read(const std::string& home);

 private:
  struct Kept {
    std::string home;
    ConfigFileStamp stamps[2];
    GitIdentity identity;
  };
  const std::string git_;
  const std::chrono::nanoseconds settle_;
  const std::string kept_file_;
  std::mutex mu_;
  std::optional<Kept> kept_;  // guarded by mu_
};

// Where moatd keeps the answer across its processes: in moat's state directory, which no
// sandbox may write (own_files.h).
std::string git_identity_kept_file();
// moatd's reader (one per process; its kept file git_identity_kept_file()).
GitIdentity read_git_identity(const std::string& home);
// read_git_identity on a thread of its own that nobody joins, so dropping the future does not
// wait for git (a refused hello is answered and its connection ends while git still runs). At
// most kMaxGitReadsAhead run at once: past that, and when no thread can be made, the future is
// not valid and the caller reads the identity itself when it needs it.
inline constexpr int kMaxGitReadsAhead = 4;
std::future<GitIdentity> read_git_identity_ahead(const std::string& home);

// The sandbox's $HOME/.gitconfig for it: a [user] section with what is set, each value quoted as
// git-config(1) reads it; "" when nothing is set. Lowest of git's config levels but the system
// one, so `git config user.name X` in a repository, `git config --global` and `git -c` override it.
std::string gitconfig_text(const GitIdentity& identity);

}  // namespace moat::sandbox
