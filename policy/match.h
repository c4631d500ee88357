// policy/match.h: does one rule match one command unit, tool name or path. Deny and ask
// rules match when an unknown value *could* make them match; allow rules only when every
// value they depend on is known to fit (so an expansion never earns an allow).
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "policy/globs.h"
#include "policy/paths.h"
#include "policy/verdict.h"
#include "policy/resolve.h"
#include "policy/schema.h"
#include "policy/units.h"

namespace moat::policy {

struct CompiledCommandRule {
  const CommandRule* rule = nullptr;
  RuleRef ref;
  std::vector<PathGlob> script_globs;
  bool allow_ignored = false;  // a lower layer's allow under managed_allows_only / the cli layer
};

struct CompiledPathRule {
  const PathRule* rule = nullptr;
  RuleRef ref;
  std::vector<PathGlob> globs, unless;
  bool read = false, write = false, exec = false;
  bool allow_ignored = false;
};

struct CompiledToolRule {
  const ToolRule* rule = nullptr;
  RuleRef ref;
  bool allow_ignored = false;
};

// What the matcher knows about a unit's program.
struct ProgramInfo {
  std::string argv0;  // as typed (NFC)
  std::string argv0_base;
  ResolvedProgram resolved;       // found=false when not on PATH or the cwd is uncertain
  bool trusted_location = false;  // typed and real path outside every writable root
};

struct MatchEnv {
  std::string home;
  const std::vector<std::string>* writable_roots = nullptr;
  PathCache* paths = nullptr;  // this decision's canonicalisation cache (required)
};

// At or below one of the roots (lexically: both are canonical).
bool is_under_any(const std::string& path, const std::vector<std::string>& roots);

ProgramInfo program_info(const CommandUnit& unit, const ProgramResolver& resolver,
                         const std::vector<std::string>& writable_roots);

bool command_rule_matches(const CompiledCommandRule& rule, const CommandUnit& unit,
                          const ProgramInfo& program, const MatchEnv& env);

// Exact: `parts` is a canonical path split with glob::split_path.
bool path_rule_matches(const CompiledPathRule& rule, const std::vector<std::string_view>& parts);
// Uncertain: some path at or below `dir` (an expansion hides which).
bool path_rule_matches_under(const CompiledPathRule& rule, const std::string& dir);

// The tool name (globs) and, for a rule with args, every argument condition (schema.h
// ToolArgCondition): present, and a value its globs match. A glob starting with "/" is a
// path glob (component by component, "**" spans directories); an allow never matches a
// path with a ".." component, a deny or ask matches its lexical form too. A number, boolean or
// null is matched as its JSON text; an object or array only by "**" for an allow, and for a
// deny or ask also when any value inside it matches.
bool tool_rule_matches(const CompiledToolRule& rule, const std::string& tool,
                       const nlohmann::json& args);

}  // namespace moat::policy
