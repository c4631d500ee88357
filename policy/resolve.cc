// policy/resolve.cc: PATH lookup with realpath, and the shell builtins PATH cannot shadow.
#include "policy/resolve.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>

#include "policy/paths.h"

namespace moat::policy {
namespace {

constexpr std::string_view kReadOnlyTrees[] = {"/usr", "/bin", "/sbin", "/lib", "/etc"};

std::string real_of(const std::string& path) {
  char buf[PATH_MAX];
  if (::realpath(path.c_str(), buf) == nullptr) return {};
  return buf;
}

bool is_executable_file(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  return ::access(path.c_str(), X_OK) == 0;
}

}  // namespace

bool is_shell_builtin(std::string_view name) {
  // The builtins bash runs itself even when a file of that name is on PATH. eval, source,
  // ".", alias, trap and the wrappers (exec, command, builtin) are handled before this.
  static constexpr std::string_view kBuiltins[] = {
      ":",        "[",       "[[",    "bg",   "break", "builtin",   "cd",       "command",
      "continue", "declare", "exec",  "dirs", "echo",  "exit",      "export",   "false",
      "fg",       "getopts", "hash",  "jobs", "kill",  "let",       "local",    "mapfile",
      "popd",     "printf",  "pushd", "pwd",  "read",  "readarray", "readonly", "return",
      "set",      "shift",   "shopt", "test", "times", "true",      "type",     "typeset",
      "ulimit",   "umask",   "unset", "wait"};
  return std::find(std::begin(kBuiltins), std::end(kBuiltins), name) != std::end(kBuiltins);
}

bool builtin_runs_nothing(std::string_view name) {
  // Left out on purpose, because they run or choose code: command, exec, builtin (run a
  // program), eval, source, ".", trap (run text; units.cc refuses them anyway), enable (-f
  // loads a shared object), hash (-p chooses the file a name runs), mapfile/readarray (-C runs
  // a callback), fc (runs an editor), set/shopt/export/declare/typeset/local/readonly/unset
  // (change what later commands run with), type (harmless, but nobody pins it).
  static constexpr std::string_view kRunsNothing[] = {
      "echo",         // prints its words
      "printf",       // prints; -v assigns a variable (an assignment rule still sees it)
      "pwd",          // prints the working directory
      "true",         // exit status only
      "false",        // exit status only
      ":",            // exit status only
      "test",   "[",  // evaluates its words (file tests stat, never run)
      "cd",     "pushd",  "popd",  "dirs",  // change or print the directory stack
      "kill",                               // sends a signal inside the sandbox's pid namespace
      "wait",                               // waits for this shell's children
      "umask",                              // file creation mask of this shell
      "times",                              // prints CPU times
      "jobs",                               // lists this shell's jobs
      "exit",   "return", "break", "continue", "shift",  // control flow of this shell
  };
  return std::find(std::begin(kRunsNothing), std::end(kRunsNothing), name) !=
         std::end(kRunsNothing);
}

std::vector<std::string> sandbox_search_path(std::string_view host_path) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i <= host_path.size()) {
    std::size_t end = host_path.find(':', i);
    if (end == std::string_view::npos) end = host_path.size();
    std::string dir(host_path.substr(i, end - i));
    i = end + 1;
    if (dir.empty() || dir[0] != '/') continue;  // "" and relative entries mean the cwd
    std::string real = real_of(dir);
    if (real.empty()) continue;
    bool system = std::any_of(std::begin(kReadOnlyTrees), std::end(kReadOnlyTrees),
                              [&](std::string_view t) { return is_under(real, t); });
    if (system && std::find(out.begin(), out.end(), dir) == out.end()) out.push_back(dir);
  }
  return out;
}

ProgramResolver::ProgramResolver(std::vector<std::string> search_dirs)
    : dirs_(std::move(search_dirs)) {}

ResolvedProgram ProgramResolver::lookup(std::string_view name) const {
  ResolvedProgram r;
  for (const auto& dir : dirs_) {
    std::string candidate = dir + "/" + std::string(name);
    if (!is_executable_file(candidate)) continue;
    r.found = true;
    r.typed_path = lexical_absolute(candidate, "/");
    r.real_path = real_of(candidate);
    return r;
  }
  return r;
}

ResolvedProgram ProgramResolver::resolve(std::string_view argv0, std::string_view cwd) const {
  if (argv0.find('/') != std::string_view::npos) {
    ResolvedProgram r;
    r.typed_path = lexical_absolute(argv0, cwd);
    if (is_executable_file(r.typed_path)) {
      r.found = true;
      r.real_path = real_of(r.typed_path);
    }
    return r;
  }
  if (is_shell_builtin(argv0)) {
    ResolvedProgram r;
    r.found = r.builtin = true;
    r.typed_path = r.real_path = "builtin:" + std::string(argv0);
    return r;
  }
  std::string key(argv0);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = cache_.find(key); it != cache_.end()) return it->second;
  }
  ResolvedProgram r = lookup(argv0);
  std::lock_guard<std::mutex> lock(mu_);
  if (cache_.size() < 4096) cache_.emplace(std::move(key), r);
  return r;
}

}  // namespace moat::policy
