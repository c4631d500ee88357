// policy/code_env.h: variables that load code or choose the executable (LD_PRELOAD, a PATH
// into a writable root, GIT_SSH_COMMAND, NODE_OPTIONS, ...). Setting one makes the unit ask,
// whatever the program's own rule says (POLICY.md "Assignments that change what runs").
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "policy/verdict.h"
#include "policy/units.h"

namespace moat::policy {

// What makes a value of the variable harmless.
enum class CodeEnvValue {
  kNone,          // no value: whatever it names is loaded or run
  kSearchPath,    // every ':' entry is a directory outside the writable roots, or the old value
  kWords,         // one of `harmless`, words that run nothing (a pager of "cat")
  kProgram,       // a bare name (looked up in PATH) or an absolute path outside the writable roots
  kPlainOptions,  // letters, digits, spaces and "-_,:" only: no '=' (a definition), '.' or '/' (a
                  // file)
};

struct CodeEnvRow {
  std::string_view
      name;  // a variable name, or a glob ("GIT_CONFIG_KEY_*"); in lower case: any case
  CodeEnvValue harmless_when;
  std::string_view harmless;  // kWords: the harmless values, separated by '|' ("|cat" = "" or cat)
  std::string_view reason;    // who reads it and what it makes them load or run
  // Judged at every exec too (the exec watch), not only on the model's line: glibc (the
  // dynamic loader, iconv) reads it into whatever program the exec runs, so the program moat
  // judged is not all that runs. The other rows make a program start others (each judged at
  // its own exec) or are read by an interpreter running code moat does not judge at exec time
  // either; and build tools set them for every child (npm's PATH and npm_config_*, make's CC),
  // which would flag every build.
  bool at_exec = false;
};

// The table, in match order (the first row whose name matches decides).
std::span<const CodeEnvRow> code_env_table();

// True for a variable of a row marked at_exec (LD_PRELOAD, ...): the exec watch keeps these
// of a new environment, and only these.
bool is_read_at_exec(std::string_view name);

// The builtin rule every code-env vote names.
const RuleRef& code_env_rule();

struct CodeEnvContext {
  const std::string& home;
  const std::vector<std::string>& writable_roots;  // canonical
};

// The row `a` hits, or null when its variable is not in the table or its value is harmless.
// Relative search path entries are resolved against every one of `cwds` ("" = unknown).
const CodeEnvRow* code_env_hit(const Assignment& a, const std::vector<std::string>& cwds,
                               const CodeEnvContext& ctx);

}  // namespace moat::policy
