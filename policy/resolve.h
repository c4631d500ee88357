// policy/resolve.h: argv0 to the file the sandbox would run, through the sandbox's PATH.
#pragma once

#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace moat::policy {

struct ResolvedProgram {
  bool found = false;
  bool builtin = false;    // a shell builtin: the shell runs it, PATH cannot replace it
  std::string typed_path;  // absolute path as found (PATH dir + name, or cwd-joined), unresolved
  std::string real_path;   // realpath of typed_path
};

// The sandbox binds /usr, /bin, /sbin, /lib and /etc read-only, so resolving there on the
// host gives what the sandbox would run. The host PATH is restricted to those trees.
std::vector<std::string> sandbox_search_path(std::string_view host_path);

class ProgramResolver {
 public:
  explicit ProgramResolver(std::vector<std::string> search_dirs);

  // A bare name is looked up in the search dirs (results cached: the dirs are read-only
  // system trees); a name with a slash is taken relative to `cwd` (never cached).
  ResolvedProgram resolve(std::string_view argv0, std::string_view cwd) const;
  const std::vector<std::string>& search_dirs() const { return dirs_; }

 private:
  ResolvedProgram lookup(std::string_view name) const;

  std::vector<std::string> dirs_;
  mutable std::mutex mu_;
  mutable std::unordered_map<std::string, ResolvedProgram> cache_;
};

bool is_shell_builtin(std::string_view name);

// A builtin that runs no other program and no code from text (echo, pwd, test, ...): an allow
// of its name allows it even when the rule pins `program_paths`/`sha256`, which name the
// external file of that name (POLICY.md "Shell builtins"). The table in resolve.cc says why
// each one is (or is not) in it.
bool builtin_runs_nothing(std::string_view name);

}  // namespace moat::policy
