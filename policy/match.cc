// policy/match.cc: rule-by-rule matching; each check returns the conservative answer for
// the rule's decision (see match.h).
#include "policy/match.h"

#include <sys/stat.h>

#include <algorithm>

#include "policy/digest.h"
#include "policy/paths.h"

namespace moat::policy {
namespace {

// Global options that take a value, per program: skipped to find the subcommand
// (`git -C dir push` is a push). From git(1), npm(1), make(1), cargo(1), docker(1).
bool global_option_takes_value(std::string_view prog, std::string_view opt) {
  struct Entry {
    std::string_view prog;
    std::vector<std::string_view> opts;
  };
  static const Entry kTable[] = {
      {"git",
       {"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--super-prefix", "--config-env"}},
      {"npm", {"--prefix", "-w", "--workspace"}},
      {"make", {"-C", "-f", "--directory", "--file", "--makefile", "-I", "-o", "-W"}},
      {"cargo", {"-C", "--config", "-Z", "--color"}},
      {"docker", {"-H", "--host", "--config", "--context", "-c", "-l", "--log-level"}},
      {"kubectl", {"-n", "--namespace", "--context", "--kubeconfig", "-s", "--server"}},
  };
  for (const auto& e : kTable)
    if (e.prog == prog) return std::find(e.opts.begin(), e.opts.end(), opt) != e.opts.end();
  return false;
}


bool program_matches(const CommandRule& r, const ProgramInfo& p, bool allow) {
  if (allow) {
    // Allow: the name as typed, a file from outside the writable roots, and the pins.
    if (!p.resolved.found || !p.trusted_location) return false;
    // A builtin has no file to pin: the pins name the external program of that name, and
    // the name decides for builtins that run nothing (resolve.h builtin_runs_nothing).
    const bool pinned = !(p.resolved.builtin && builtin_runs_nothing(p.argv0_base));
    if (pinned && !r.program_paths.empty() &&
        std::find(r.program_paths.begin(), r.program_paths.end(), p.resolved.real_path) ==
            r.program_paths.end())
      return false;
    if (pinned && !r.sha256.empty()) {
      auto digest = sha256_file_hex(p.resolved.real_path);
      if (!digest || *digest != r.sha256) return false;
    }
    if (r.program.empty()) return true;
    for (const auto& name : r.program) {
      if (name[0] == '/') {
        if (p.resolved.real_path == name || p.resolved.typed_path == name) return true;
      } else if (glob::word_matches(name, p.argv0_base)) {
        return true;
      }
    }
    return false;
  }
  // Deny/ask: the basename as typed or of the real file, or either full path.
  if (r.program.empty()) return true;
  std::string_view real_base = base_name(p.resolved.real_path);
  for (const auto& name : r.program) {
    if (name[0] == '/') {
      if (p.argv0 == name || p.resolved.typed_path == name || p.resolved.real_path == name)
        return true;
    } else if (glob::word_matches(name, p.argv0_base) ||
               (!real_base.empty() && !p.resolved.builtin && glob::word_matches(name, real_base))) {
      return true;
    }
  }
  return false;
}

bool args_from(const std::vector<ArgPattern>& pats, std::size_t pi,
               const std::vector<const Arg*>& words, std::size_t wi, bool conservative) {
  if (pi == pats.size()) {
    if (wi == words.size()) return true;
    // Leftover words that may expand to nothing could still make an exact match.
    return conservative && std::all_of(words.begin() + static_cast<std::ptrdiff_t>(wi), words.end(),
                                       [](const Arg* a) { return a->may_split; });
  }
  const auto& alts = pats[pi].alternatives;
  if (alts.size() == 1 && alts[0] == "**") return true;
  if (wi == words.size()) return false;
  const Arg& w = *words[wi];
  if (w.may_split) return conservative;
  if (!w.known) {
    bool star = std::find(alts.begin(), alts.end(), "*") != alts.end();
    return (conservative || star) && args_from(pats, pi + 1, words, wi + 1, conservative);
  }
  for (const auto& alt : alts)
    if (glob::word_matches(alt, w.text))
      return args_from(pats, pi + 1, words, wi + 1, conservative);
  return false;
}

bool args_match(const CommandRule& r, const CommandUnit& u, bool conservative) {
  if (r.args.empty()) return true;
  std::vector<const Arg*> words;
  for (std::size_t i = 1; i < u.argv.size(); ++i) words.push_back(&u.argv[i]);
  if (args_from(r.args, 0, words, 0, conservative)) return true;
  // Again with the program's leading global options skipped: `git -C d --no-pager push`.
  std::string_view prog = u.argv.empty() ? "" : base_name(u.argv[0].text);
  std::size_t i = 0;
  while (i < words.size() && words[i]->known && words[i]->text.size() > 1 &&
         words[i]->text[0] == '-') {
    std::string_view opt = words[i]->text;
    opt = opt.substr(0, opt.find('='));
    bool takes =
        global_option_takes_value(prog, opt) && words[i]->text.find('=') == std::string::npos;
    i += takes ? 2 : 1;
  }
  if (i == 0 || i > words.size()) return false;
  std::vector<const Arg*> rest(words.begin() + static_cast<std::ptrdiff_t>(i), words.end());
  return args_from(r.args, 0, rest, 0, conservative);
}

// Programs whose long options may be abbreviated to any unique prefix (issue 27 item 23):
// git's parse-options, getopt_long(3) (GNU coreutils, tar's argp, gawk, util-linux, sudo,
// the GNU exec wrappers of units.cc's table, busybox) and npm's nopt. Not here because they
// take long options only whole: bash and the other shells (shell.c compares with STREQ),
// python, node, perl, ruby, find's single-dash words.
bool accepts_abbreviated_long_options(std::string_view prog) {
  static constexpr std::string_view kPrograms[] = {
      "git",   "rm",     "chmod",  "chown", "chgrp",  "cp",     "mv",      "ln",   "install",
      "tar",   "sort",   "gawk",   "awk",   "sed",    "grep",   "env",     "timeout", "nice",
      "ionice", "stdbuf", "setsid", "xargs", "time",  "sudo",   "chroot",  "busybox", "npm",
  };
  return std::find(std::begin(kPrograms), std::end(kPrograms), prog) != std::end(kPrograms);
}

// Long options that are complete options of their own although a longer option a rule names
// starts with them: the program takes them as written, not as that longer option.
bool is_complete_long_option(std::string_view prog, std::string_view flag) {
  return (prog == "tar" && flag == "--checkpoint") || (prog == "git" && flag == "--force");
}

// `flag` (as typed: "--force-w") is an accepted abbreviation of `spec` ("--force-with-lease").
// Every long option a rule names that it starts with counts: "--f" is ambiguous to git, which
// refuses it, and matching it as each is what a deny or ask needs. Only literal specs: a
// glob already says which words it means.
bool abbreviates(std::string_view prog, const std::string& spec, const std::string& flag) {
  if (flag.size() < 3 || flag.size() >= spec.size() || flag.rfind("--", 0) != 0) return false;
  if (spec.find_first_of("*?[\\") != std::string::npos) return false;
  if (is_complete_long_option(prog, flag)) return false;
  return spec.compare(0, flag.size(), flag) == 0 && accepts_abbreviated_long_options(prog);
}

// `abbreviations`: whether a prefix the program would take as the option counts. The callers
// pass true only where counting it makes the answer stricter (a deny's or ask's flag, an
// allow's no_flag or exception), so an abbreviation never widens an allow.
bool has_flag(const CommandUnit& u, const std::string& spec, bool abbreviations = false) {
  std::string_view prog = u.argv.empty() ? "" : base_name(u.argv[0].text);
  return std::any_of(u.flags.begin(), u.flags.end(), [&](const std::string& f) {
    return glob::word_matches(spec, f) || (abbreviations && abbreviates(prog, spec, f));
  });
}

// "any of these flags is present": unknown flags and abbreviations count only for
// conservative checks.
bool any_flag_present(const Strings& specs, const CommandUnit& u, bool unknown_counts) {
  for (const auto& s : specs)
    if (has_flag(u, s, unknown_counts)) return true;
  return unknown_counts && u.flags_unknown;
}

bool word_matches_any(const Strings& globs, const Arg& a, bool unknown_counts) {
  if (!a.known || a.home) return unknown_counts;
  return std::any_of(globs.begin(), globs.end(),
                     [&](const std::string& g) { return glob::word_matches(g, a.text); });
}

// `unless.any_arg`: operands only. An exception loosens the rule, so a made-up option word
// (`rm -rf / --x.txt`) must not be able to switch it on.
bool any_operand_matches(const Strings& globs, const CommandUnit& u, bool unknown_counts) {
  return std::any_of(u.operands.begin(), u.operands.end(), [&](std::size_t i) {
    return word_matches_any(globs, u.argv[i], unknown_counts);
  });
}

// `any_arg`: every word after the program, option-looking ones included: `find . -delete`
// and `-fprint` are arguments of find, not getopt flags (POLICY.md, "Conditions in one rule").
bool any_word_matches(const Strings& globs, const CommandUnit& u, bool unknown_counts) {
  return std::any_of(u.argv.begin() + 1, u.argv.end(),
                     [&](const Arg& a) { return word_matches_any(globs, a, unknown_counts); });
}

// `any_flag` and `any_arg` are alternatives: with both, either one matching is enough (the
// org.no-force-push example lists `-f` and `+main` in its tests.match). A rule without
// either has no such condition.
bool any_flag_or_arg(const CommandRule& r, const CommandUnit& u, bool conservative) {
  if (r.any_flag.empty() && r.any_arg.empty()) return true;
  return (!r.any_flag.empty() && any_flag_present(r.any_flag, u, conservative)) ||
         (!r.any_arg.empty() && any_word_matches(r.any_arg, u, conservative));
}

bool script_path_matches(const CompiledCommandRule& r, const CommandUnit& u, const MatchEnv& env,
                         bool conservative) {
  if (r.script_globs.empty()) return true;
  if (u.operands.empty()) return false;
  const Arg& a = u.argv[u.operands.front()];
  if (!a.known && !a.home) return conservative;
  bool all = true, any = false;
  for (const auto& cwd : u.cwds) {
    if (cwd.empty() && !a.home && (a.text.empty() || a.text[0] != '/')) {
      all = false;
      any = any || conservative;
      continue;
    }
    std::string path =
        a.home ? env.paths->canonical(env.home + a.text, "/") : env.paths->canonical(a.text, cwd);
    bool hit = std::any_of(r.script_globs.begin(), r.script_globs.end(),
                           [&](const PathGlob& g) { return path_glob_matches(g, path); });
    // An allow names a script file; an operand that is not one (a module name, a file
    // to be created later) is not what the rule allowed.
    struct stat st;
    if (hit && !conservative && (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)))
      hit = false;
    all = all && hit;
    any = any || hit;
  }
  return conservative ? any : all;
}

}  // namespace

bool is_under_any(const std::string& path, const std::vector<std::string>& roots) {
  return std::any_of(roots.begin(), roots.end(),
                     [&](const std::string& r) { return is_under(path, r); });
}

ProgramInfo program_info(const CommandUnit& unit, const ProgramResolver& resolver,
                         const std::vector<std::string>& writable_roots) {
  ProgramInfo p;
  if (unit.argv.empty()) return p;
  p.argv0 = unit.argv[0].text;
  p.argv0_base = std::string(base_name(p.argv0));
  bool relative_path = p.argv0.find('/') != std::string::npos && p.argv0[0] != '/';
  bool cwd_certain = unit.cwds.size() == 1 && !unit.cwds[0].empty();
  if (relative_path && !cwd_certain) return p;  // which file it names depends on a cd
  p.resolved = resolver.resolve(p.argv0, unit.cwds.empty() ? "/" : unit.cwds[0]);
  if (p.resolved.builtin) {
    p.trusted_location = true;
  } else if (p.resolved.found && !p.resolved.real_path.empty()) {
    p.trusted_location = !is_under_any(p.resolved.typed_path, writable_roots) &&
                         !is_under_any(p.resolved.real_path, writable_roots);
  }
  return p;
}

bool command_rule_matches(const CompiledCommandRule& cr, const CommandUnit& u, const ProgramInfo& p,
                          const MatchEnv& env) {
  const CommandRule& r = *cr.rule;
  const bool allow = r.decision == Verdict::kAllow;
  const bool conservative = !allow;
  if (u.argv.empty()) return false;
  if (!program_matches(r, p, allow)) return false;
  if (!any_flag_or_arg(r, u, conservative)) return false;
  for (const auto& f : r.all_flags)
    if (!has_flag(u, f, conservative) && !(conservative && u.flags_unknown)) return false;
  for (const auto& f : r.no_flag)
    if (has_flag(u, f, allow)) return false;
  if (!r.no_flag.empty() && allow && u.flags_unknown) return false;
  if (!r.any_env.empty()) {
    bool hit = std::any_of(u.env.begin(), u.env.end(), [&](const std::string& name) {
      return std::any_of(r.any_env.begin(), r.any_env.end(),
                         [&](const std::string& g) { return glob::word_matches(g, name); });
    });
    if (!hit) return false;
  }
  if (!args_match(r, u, conservative)) return false;
  if (!script_path_matches(cr, u, env, conservative)) return false;
  // unless: an exception applies when known to; for allows also when it might.
  if (!r.unless.any_flag.empty() && any_flag_present(r.unless.any_flag, u, allow)) return false;
  if (!r.unless.any_arg.empty() && any_operand_matches(r.unless.any_arg, u, allow)) return false;
  return true;
}

bool path_rule_matches(const CompiledPathRule& r, const std::vector<std::string_view>& parts) {
  auto hit = [&](const PathGlob& g) { return path_glob_matches_parts(g, parts); };
  if (!std::any_of(r.globs.begin(), r.globs.end(), hit)) return false;
  return std::none_of(r.unless.begin(), r.unless.end(), hit);
}

bool path_rule_matches_under(const CompiledPathRule& r, const std::string& dir) {
  if (r.rule->decision == Verdict::kAllow) {
    if (!std::any_of(r.globs.begin(), r.globs.end(),
                     [&](const PathGlob& g) { return path_glob_covers_all_under(g, dir); }))
      return false;
    return std::none_of(r.unless.begin(), r.unless.end(),
                        [&](const PathGlob& g) { return path_glob_may_match_under(g, dir); });
  }
  if (!std::any_of(r.globs.begin(), r.globs.end(),
                   [&](const PathGlob& g) { return path_glob_may_match_under(g, dir); }))
    return false;
  return std::none_of(r.unless.begin(), r.unless.end(),
                      [&](const PathGlob& g) { return path_glob_covers_all_under(g, dir); });
}

namespace {

// RFC 6901 without exceptions: nullptr when a step is missing.
const nlohmann::json* json_at(const nlohmann::json& doc, const std::string& key) {
  if (key.empty() || key[0] != '/') return doc.is_object() && doc.contains(key) ? &doc[key] : nullptr;
  const nlohmann::json* at = &doc;
  std::size_t i = 1;
  while (at != nullptr && i <= key.size()) {
    std::size_t end = std::min(key.find('/', i), key.size());
    std::string token;
    for (std::size_t k = i; k < end; ++k)
      token += key[k] == '~' && k + 1 < end ? (key[++k] == '1' ? '/' : '~') : key[k];
    if (at->is_object()) {
      at = at->contains(token) ? &(*at)[token] : nullptr;
    } else if (at->is_array() && !token.empty() && token.size() < 10 &&
               std::all_of(token.begin(), token.end(), ::isdigit)) {
      const std::size_t n = std::stoul(token);
      at = n < at->size() ? &(*at)[n] : nullptr;
    } else {
      at = nullptr;
    }
    i = end + 1;
  }
  return at;
}

bool is_path_glob(const std::string& g) { return !g.empty() && g[0] == '/'; }

bool has_dotdot(std::string_view path) {
  for (auto part : glob::split_path(path))
    if (part == "..") return true;
  return false;
}

// One scalar's text against one glob.
bool scalar_matches(const std::string& g, const std::string& text, bool allow) {
  if (g == "*" || g == "**") return true;
  if (!is_path_glob(g)) return glob::word_matches(g, text);
  if (allow) return !has_dotdot(text) && glob::path_matches(g, text);
  return glob::path_matches(g, text) ||
         (!text.empty() && text[0] == '/' && glob::path_matches(g, lexical_absolute(text, "/")));
}

bool value_matches(const Strings& globs, const nlohmann::json& v, bool allow, int depth) {
  if (std::find(globs.begin(), globs.end(), "**") != globs.end()) return true;
  if (v.is_structured()) {
    if (allow || depth > 64) return !allow;  // too deep to look into: a deny or ask holds
    return std::any_of(v.begin(), v.end(), [&](const nlohmann::json& e) {
      return value_matches(globs, e, allow, depth + 1);
    });
  }
  const std::string text = v.is_string() ? v.get<std::string>() : v.dump();
  return std::any_of(globs.begin(), globs.end(),
                     [&](const std::string& g) { return scalar_matches(g, text, allow); });
}

}  // namespace

bool tool_rule_matches(const CompiledToolRule& cr, const std::string& tool,
                       const nlohmann::json& args) {
  const ToolRule& r = *cr.rule;
  auto hit = [&](const Strings& globs, const std::string& s) {
    return std::any_of(globs.begin(), globs.end(),
                       [&](const std::string& g) { return glob::word_matches(g, s); });
  };
  if (!hit(r.tool, tool)) return false;
  if (hit(r.unless.tool, tool)) return false;
  if (!r.unless.server.empty() && tool.rfind("mcp:", 0) == 0) {
    std::string rest = tool.substr(4);
    std::string server = rest.substr(0, rest.find(':'));
    if (hit(r.unless.server, server)) return false;
  }
  const bool allow = r.decision == Verdict::kAllow;
  return std::all_of(r.args.begin(), r.args.end(), [&](const ToolArgCondition& c) {
    const nlohmann::json* v = json_at(args, c.key);
    return v != nullptr && value_matches(c.globs, *v, allow, 0);
  });
}

}  // namespace moat::policy
