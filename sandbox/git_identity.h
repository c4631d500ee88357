// sandbox/git_identity.h: the person's git identity (user.name, user.email), read on the host at
// hello from their global git config, so a commit inside the sandbox has an author (issue 27
// item 17): the sandbox's HOME is its private /tmp, where the host's ~/.gitconfig is not.
#pragma once

#include <string>

namespace moat::sandbox {

struct GitIdentity {
  std::string name;   // user.name, "" when unset
  std::string email;  // user.email, "" when unset
};

// Runs one `git config --global -z --get-regexp` for user.name and user.email with the working
// directory "/" and an environment of only HOME (and PATH), so no repository's config and
// nothing but the person's global files (~/.gitconfig, ~/.config/git/config) are read. Nothing
// else of them is taken. A value that git cannot give in 5 s, or holds a control character, is
// left out.
GitIdentity read_git_identity(const std::string& home);

// The sandbox's $HOME/.gitconfig for it: a [user] section with what is set, each value quoted as
// git-config(1) reads it; "" when nothing is set. Lowest of git's config levels but the system
// one, so `git config user.name X` in a repository, `git config --global` and `git -c` override it.
std::string gitconfig_text(const GitIdentity& identity);

}  // namespace moat::sandbox
