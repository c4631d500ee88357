// policy/command_unit.h: one simple command as the matcher judges it (its words, flags,
// operands, variables and the paths it reads and writes); below units.h, which plans a line
// into them, and write_targets.h, which finds the paths their operands write.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "policy/shell_parse.h"

namespace moat::policy {

// One argv word with what is known about it before the shell runs.
struct Arg {
  std::string text;           // the value (NFC), or the word as written when not known
  bool known = true;          // the value is exactly `text`
  bool may_split = false;     // an unquoted expansion: may become several words, or none
  std::string prefix;         // the known leading part ("--out=" of --out=$X)
  bool home = false;          // ~/rest or $HOME/rest with a known rest: `text` is the rest
  std::string glob;           // unknown only through pathname expansion: the glob(3) pattern
  std::vector<Segment> segs;  // unknown words only: the pieces ($PATH, not '$PATH'), for code_env
  bool may_be_flag() const { return !known && (prefix.empty() || prefix[0] == '-'); }
};

// A path the unit reads or writes, resolved against one of the possible working directories.
struct PathTarget {
  Arg path;
  std::string cwd;     // "" when the working directory is not known (after `cd $X`)
  std::string via;     // "redirect >", "redirect <" or "operand of tee"
  bool below = false;  // some path at or below `path`, which one is not known (tar -x -C DIR)
};

// A variable the unit sets: for the program it runs (a NAME=value prefix, `env NAME=value`) or
// for the rest of the line (a bare assignment, export/declare/local/readonly, read, printf -v,
// mapfile, a for loop). policy/code_env.h judges the ones that change what runs.
struct Assignment {
  std::string name;
  Arg value;        // unknown when it comes from stdin or an expansion
  std::string how;  // "prefix" | "assignment" | "env" | "export" | "read" | "for" ...
};

struct CommandUnit {
  std::vector<Arg> argv;            // may be empty for a redirection-only command
  std::vector<std::string> env;     // variable names set for this command
  std::vector<Assignment> assigns;  // every variable it sets, with its value
  std::vector<std::string>
      flags;                   // normalised: "-r" "-f" from -rf, "--opt" from --opt=v, raw words
  bool flags_unknown = false;  // an expansion could add any flag
  std::vector<std::size_t> operands;  // indexes into argv of the non-flag words
  std::vector<PathTarget> reads;      // input redirections (`<`, `<>`, `0<`), judged as path reads
  std::vector<PathTarget> writes;
  std::vector<std::string> cwds;  // possible working directories; "" = unknown
  int depth = 0;
  std::string origin;                 // "" | "$()" | "``" | "<()" | "sh -c" | "find -exec" ...
  std::string wrapper;                // the wrapper this unit was unwrapped from
  bool rules_only = false;            // a wrapper's own argv: judged only by rules that match it
  std::vector<std::string> problems;  // why it cannot be judged statically

  std::string argv_text() const;  // for explain and audit records
};

}  // namespace moat::policy
