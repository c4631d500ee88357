// policy/units.cc: parse -> units. The wrapper table lives here: each entry is the option
// spec of one exec wrapper, so `timeout -s KILL 5 rm -rf x` yields the units
// [timeout -s KILL 5] (rules only) and [rm -rf x] (POLICY.md bypass class 5).
#include "policy/units.h"

#include <utf8proc.h>

#include <algorithm>
#include <cstdlib>
#include <memory>

#include "policy/paths.h"
#include "policy/write_targets.h"

namespace moat::policy {
namespace {

enum class WrapKind {
  kPrefix,   // options, then fixed operands, then the command
  kEnv,      // like kPrefix, plus NAME=VALUE operands and -S "split string"
  kBusybox,  // the next word is the applet
  kShell,    // sh -c SCRIPT: the script is parsed; without -c it is a plain command
  kFind,     // find ... -exec CMD ... ; (or +)
  kXargs,    // like kPrefix; the command also gets words from stdin
};

struct WrapperSpec {
  std::string_view name;
  WrapKind kind;
  std::string_view value_short;              // short options that take a value
  std::vector<std::string_view> value_long;  // long options that take a value (no "=")
  int fixed_operands = 0;                    // operands before the command (timeout's duration)
  std::string_view lookup_flags;             // short flags that mean "do not run" (command -v)
};

// Option specs from each tool's man page (coreutils 9, util-linux 2.38, findutils 4.9,
// sudo 1.9, bash 5.2). Only options that take a value matter: they decide where the inner
// command starts.
const std::vector<WrapperSpec>& wrappers() {
  static const std::vector<WrapperSpec> table = {
      {"env",
       WrapKind::kEnv,
       "uCS",
       {"--unset", "--chdir", "--split-string", "--block-signal", "--default-signal",
        "--ignore-signal"},
       0,
       ""},
      {"timeout", WrapKind::kPrefix, "sk", {"--signal", "--kill-after"}, 1, ""},
      {"nice", WrapKind::kPrefix, "n", {"--adjustment"}, 0, ""},
      {"ionice",
       WrapKind::kPrefix,
       "cnpPu",
       {"--class", "--classdata", "--pid", "--pgid", "--uid"},
       0,
       "pPu"},
      {"nohup", WrapKind::kPrefix, "", {}, 0, ""},
      {"stdbuf", WrapKind::kPrefix, "ioe", {"--input", "--output", "--error"}, 0, ""},
      {"setsid", WrapKind::kPrefix, "", {}, 0, ""},
      {"xargs",
       WrapKind::kXargs,
       "adEILnPs",
       {"--arg-file", "--delimiter", "--eof", "--replace", "--max-lines", "--max-args",
        "--max-procs", "--max-chars", "--process-slot-var"},
       0,
       ""},
      {"command", WrapKind::kPrefix, "", {}, 0, "vV"},
      {"builtin", WrapKind::kPrefix, "", {}, 0, ""},
      {"exec", WrapKind::kPrefix, "a", {}, 0, ""},
      {"time", WrapKind::kPrefix, "fo", {"--format", "--output"}, 0, ""},
      {"busybox", WrapKind::kBusybox, "", {}, 0, ""},
      {"sudo",
       WrapKind::kPrefix,
       "CDghpRrTtUu",
       {"--close-from", "--chdir", "--group", "--host", "--prompt", "--chroot", "--role", "--type",
        "--command-timeout", "--other-user", "--user"},
       0,
       "lvkK"},
      {"doas", WrapKind::kPrefix, "uC", {}, 0, "L"},
      {"chroot", WrapKind::kPrefix, "", {"--userspec", "--groups"}, 1, ""},
      {"find", WrapKind::kFind, "", {}, 0, ""},
      {"sh", WrapKind::kShell, "oO", {"--rcfile", "--init-file"}, 0, ""},
      {"bash", WrapKind::kShell, "oO", {"--rcfile", "--init-file"}, 0, ""},
      {"dash", WrapKind::kShell, "oO", {}, 0, ""},
      {"zsh", WrapKind::kShell, "oO", {}, 0, ""},
      {"ksh", WrapKind::kShell, "oO", {}, 0, ""},
  };
  return table;
}

const WrapperSpec* find_wrapper(std::string_view name) {
  for (const auto& w : wrappers())
    if (w.name == name) return &w;
  return nullptr;
}

// Builtins whose argument is code run later or elsewhere: nothing static can judge them.
bool runs_code_from_text(std::string_view name) {
  return name == "eval" || name == "source" || name == "." || name == "alias" || name == "trap" ||
         name == "enable" || name == "coproc";
}

std::string nfc(const std::string& s, bool& valid) {
  valid = true;
  if (std::all_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; }))
    return s;
  utf8proc_uint8_t* out = utf8proc_NFC(reinterpret_cast<const utf8proc_uint8_t*>(s.c_str()));
  if (out == nullptr) {
    valid = false;
    return s;
  }
  std::string r(reinterpret_cast<char*>(out));
  std::free(out);
  return r;
}

Arg to_arg(const Word& w) {
  Arg a;
  bool valid = true;
  a.known = w.is_literal();
  a.text = nfc(a.known ? w.literal() : w.literal(), valid);
  a.prefix = nfc(w.literal_prefix(), valid);
  a.may_split = w.may_split();
  if (!a.known) a.segs = w.segs;
  // Only pathname expansion unknown: keep a glob(3) pattern, quoted parts escaped.
  bool glob_only = std::all_of(w.segs.begin(), w.segs.end(), [](const Segment& s) {
    return s.kind == SegKind::kLiteral || s.kind == SegKind::kGlob;
  });
  if (!a.known && glob_only) {
    for (const auto& s : w.segs) {
      if (s.kind == SegKind::kGlob) {
        a.glob += s.text;
        continue;
      }
      for (char c : s.text) {
        if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') a.glob += '\\';
        a.glob += c;
      }
    }
  }
  // ~/rest and $HOME/rest: resolvable paths if the rest is literal.
  if (!w.segs.empty() && ((w.segs[0].kind == SegKind::kTilde && w.segs[0].text.empty()) ||
                          (w.segs[0].kind == SegKind::kVar && w.segs[0].text == "HOME"))) {
    bool rest_literal = std::all_of(w.segs.begin() + 1, w.segs.end(),
                                    [](const Segment& s) { return s.kind == SegKind::kLiteral; });
    if (rest_literal) {
      std::string rest;
      for (auto it = w.segs.begin() + 1; it != w.segs.end(); ++it) rest += it->text;
      if (rest.empty() || rest[0] == '/') {
        a.home = true;
        a.text = nfc(rest, valid);
        a.may_split = false;
      }
    }
  }
  return a;
}

Arg unknown_arg(const char* what) {
  Arg a;
  a.text = what;
  a.known = false;
  a.may_split = true;
  return a;
}

bool is_process_substitution(const Word& w) {
  return w.segs.size() == 1 && w.segs[0].kind == SegKind::kSubst &&
         (w.segs[0].opener == '<' || w.segs[0].opener == '>');
}

bool is_flag_word(const Arg& a) { return a.known && a.text.size() > 1 && a.text[0] == '-'; }

// Write operands and option values (policy/write_targets.cc), once per possible cwd.
void add_operand_writes(CommandUnit& u) {
  for (auto& w : operand_writes(u, u.problems))
    for (const auto& cwd : u.cwds) u.writes.push_back({w.path, cwd, w.via, w.below});
}

// NAME=value as one argv word (env, export): the name, and the value with what is known of it.
Assignment assignment_word(const Arg& word, const char* how) {
  const std::string& text = word.known ? word.text : word.prefix;
  const std::size_t eq = text.find('=');
  Assignment a{text.substr(0, eq), Arg{}, how};
  a.value.text = word.text.substr(std::min(eq + 1, word.text.size()));
  a.value.known = word.known;
  if (!word.known) {
    // Drop "NAME=" from the pieces; the prefix holds it, so it is all literal.
    a.value.segs = word.segs;
    std::size_t drop = eq + 1;
    while (!a.value.segs.empty() && drop > 0) {
      Segment& first = a.value.segs.front();
      std::size_t n = std::min(drop, first.text.size());
      first.text.erase(0, n);
      drop -= n;
      if (first.text.empty()) a.value.segs.erase(a.value.segs.begin());
    }
  }
  return a;
}

bool is_name(std::string_view s) {
  return !s.empty() && (std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_') &&
         std::all_of(s.begin(), s.end(), [](char c) {
           return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
         });
}

// Builtins that set variables for the rest of the line, by their operands: export NAME=value,
// read NAME, printf -v NAME, mapfile NAME, getopts OPTSTRING NAME. Options that take a value
// are skipped (bash(1) SHELL BUILTIN COMMANDS), attached or not (`read -d '' X`, `-d:`); a
// name-valued option (read -a, printf -v) is a name, attached or not (`printf -vPATH`).
struct SetterSpec {
  std::string_view name;
  std::string_view value_opts;  // short options whose value is skipped
  std::string_view name_opts;   // short options whose value is a variable name
  std::string_view alias_opts;  // short options that make a name refer to another (declare -n)
  bool operands_assign;       // export NAME=value: an operand with '=' assigns; an unknown one may
  bool operands_are_names;    // read NAME...: every operand is a name (value unknown)
  bool last_operand_is_name;  // mapfile [opts] [NAME]
  int name_operand;  // getopts OPTSTRING NAME: the operand at this index is a name (-1: none)
};

constexpr SetterSpec kSetters[] = {
    {"export", "", "", "", true, false, false, -1},
    {"declare", "", "", "n", true, false, false, -1},  // declare -n P=PATH: P=x then sets PATH
    {"typeset", "", "", "n", true, false, false, -1},
    {"local", "", "", "n", true, false, false, -1},
    {"readonly", "", "", "", true, false, false, -1},
    {"let", "", "", "", true, false, false, -1},  // let PATH=1: arithmetic, but a value
    {"read", "dinNptu", "a", "", false, true, false, -1},
    {"printf", "", "v", "", false, false, false, -1},
    {"mapfile", "dnOsuCc", "", "", false, false, true, -1},
    {"readarray", "dnOsuCc", "", "", false, false, true, -1},
    {"getopts", "", "", "", false, false, false,
     1},  // `getopts x PATH` sets PATH=x: a relative directory
    {"wait", "p", "p", "", false, false, false, -1},  // wait -p PATH: a pid, a relative directory
};

void inherit_env(CommandUnit& inner, const CommandUnit& outer, std::vector<Assignment> extra) {
  inner.env = outer.env;
  inner.assigns = outer.assigns;
  for (auto& a : extra) {
    inner.env.push_back(a.name);
    inner.assigns.push_back(std::move(a));
  }
}

Arg unknown_value() {
  Arg v;
  v.known = false;
  v.text = "<set when it runs>";
  return v;
}

void arithmetic_assignments(std::string_view t, std::vector<Assignment>& out);

// `unset PATH` (or `unset -v PATH`): bash then looks a bare program name up in the working
// directory, as an empty PATH entry does. Unsetting any other variable of the table loads less.
void unset_assignments(CommandUnit& u) {
  for (std::size_t i = 1; i < u.argv.size(); ++i) {
    const Arg& a = u.argv[i];
    if (!a.known) u.assigns.push_back({"", unknown_value(), "unset"});
    else if (a.text == "PATH") u.assigns.push_back({"PATH", Arg{}, "unset"});  // known, empty
  }
}

void builtin_assignments(CommandUnit& u) {
  if (u.argv.empty() || !u.argv[0].known) return;
  if (u.argv[0].text == "unset") return unset_assignments(u);
  const SetterSpec* spec = nullptr;
  for (const auto& s : kSetters)
    if (s.name == u.argv[0].text) spec = &s;
  if (spec == nullptr) return;
  const std::string how(spec->name);
  std::vector<std::string> operands;
  for (std::size_t i = 1; i < u.argv.size(); ++i) {
    const Arg& a = u.argv[i];
    const std::string& text = a.known ? a.text : a.prefix;
    if (a.known && text.size() > 1 && text[0] == '-' && operands.empty() && text != "--") {
      // An option cluster: -rv NAME, -vNAME, -d '' NAME, -d: NAME.
      for (std::size_t k = 1; k < text.size(); ++k) {
        const char opt = text[k];
        if (spec->alias_opts.find(opt) != std::string_view::npos)
          u.assigns.push_back(
              {"", unknown_value(), how});  // which variable a reference sets is not known here
        const bool names = spec->name_opts.find(opt) != std::string_view::npos;
        if (!names && spec->value_opts.find(opt) == std::string_view::npos) continue;
        std::string value = text.substr(k + 1);
        if (value.empty() && i + 1 < u.argv.size()) {
          const Arg& next = u.argv[++i];
          if (names && !next.known) u.assigns.push_back({"", unknown_value(), how});
          value = next.known ? next.text : "";
        }
        if (names && !value.empty()) u.assigns.push_back({value, unknown_value(), how});
        break;
      }
      continue;
    }
    std::size_t eq = text.find('=');
    std::string name = eq == std::string::npos ? "" : text.substr(0, eq);
    const bool append = !name.empty() && name.back() == '+';  // export PATH+=:./bin
    if (append) name.pop_back();
    if (spec->operands_assign && eq != std::string::npos && is_name(name)) {
      Assignment set = assignment_word(a, how.c_str());
      set.name = name;
      if (append) {  // the old value, then the text: `PATH+=./bin` is $PATH./bin
        Arg v;
        v.known = false;
        v.text = "$" + name + set.value.text;
        v.segs.push_back({SegKind::kVar, name, true, 0});
        if (set.value.known) v.segs.push_back({SegKind::kLiteral, set.value.text, true, 0});
        else v.segs.insert(v.segs.end(), set.value.segs.begin(), set.value.segs.end());
        set.value = std::move(v);
      }
      u.assigns.push_back(std::move(set));
    } else if (a.known) {
      operands.push_back(is_name(a.text) ? a.text : "");
    } else if (spec->operands_assign || spec->operands_are_names) {
      u.assigns.push_back({"", unknown_value(), how});  // an expansion hides which variable
    } else {
      operands.push_back("?");  // an unknown operand: which name it is, if any, is not known
    }
  }
  auto named = [&](const std::string& n) {
    if (n == "?") u.assigns.push_back({"", unknown_value(), how});
    else if (!n.empty()) u.assigns.push_back({n, unknown_value(), how});
  };
  if (spec->operands_are_names)
    for (const auto& n : operands) named(n);
  if (spec->last_operand_is_name && !operands.empty()) named(operands.back());
  if (spec->name == "let")  // let PATH++, let 'PATH+=1'
    for (std::size_t i = 1; i < u.argv.size(); ++i)
      if (u.argv[i].known) arithmetic_assignments(u.argv[i].text, u.assigns);
  if (spec->name_operand >= 0 && operands.size() > static_cast<std::size_t>(spec->name_operand))
    named(operands[static_cast<std::size_t>(spec->name_operand)]);
}

// Names an arithmetic expression assigns: `PATH=1`, `PATH+=1`, `PATH++`, `--PATH` (a number
// is a relative directory for PATH). Over-approximates: an assignment operator after a name.
void arithmetic_assignments(std::string_view t, std::vector<Assignment>& out) {
  auto name_char = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (std::size_t i = 0; i < t.size();) {
    if (!(std::isalpha(static_cast<unsigned char>(t[i])) || t[i] == '_') ||
        (i > 0 && (name_char(t[i - 1]) || t[i - 1] == '$'))) {
      ++i;
      continue;
    }
    std::size_t end = i;
    while (end < t.size() && name_char(t[end])) ++end;
    const bool pre = i >= 2 && (t.substr(i - 2, 2) == "++" || t.substr(i - 2, 2) == "--");
    std::size_t k = end;
    while (k < t.size() && (t[k] == ' ' || t[k] == '\t')) ++k;
    const std::string_view rest = t.substr(k);
    bool assigns = pre || rest.starts_with("++") || rest.starts_with("--") ||
                   rest.starts_with("<<=") || rest.starts_with(">>=");
    if (!assigns && !rest.empty() &&
        std::string_view("=+-*/%&^|").find(rest[0]) != std::string_view::npos) {
      if (rest[0] == '=') assigns = rest.size() < 2 || rest[1] != '=';
      else assigns = rest.size() > 1 && rest[1] == '=';
    }
    if (assigns) out.push_back({std::string(t.substr(i, end - i)), unknown_value(), "arithmetic"});
    i = end;
  }
}

// Variables a word's expansions set: `${PATH:=./bin}`, `${PATH=x}`, and arithmetic in
// `$((PATH=1))`, `${a[PATH=1]}` or `${x:PATH=1}`.
void expansion_assignments(const Word& w, std::vector<Assignment>& out) {
  auto name_char = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (const auto& s : w.segs) {
    if (s.kind != SegKind::kSubst || s.opener != 0) continue;
    const std::string& t = s.text;
    if (t.rfind("${", 0) == 0) {
      std::size_t n = 2;
      const bool indirect = n < t.size() && t[n] == '!';
      if (indirect) ++n;
      std::size_t end = n;
      while (end < t.size() && name_char(t[end])) ++end;
      std::size_t op = end + (end < t.size() && t[end] == ':' ? 1 : 0);
      if (end > n && op < t.size() && t[op] == '=')
        out.push_back({indirect ? "" : t.substr(n, end - n), unknown_value(), "${NAME:=}"});
    }
    arithmetic_assignments(t, out);
  }
}

// `exec {PATH}</dev/null` sets PATH to the new descriptor's number (10 or more): bash takes a
// {NAME} word right before a redirection as the variable to set.
bool is_fd_variable_word(const Arg& a) {
  return a.known && a.text.size() > 2 && a.text.front() == '{' && a.text.back() == '}' &&
         is_name(std::string_view(a.text).substr(1, a.text.size() - 2));
}

class Planner {
 public:
  Planner(const std::string& home, LinePlan& plan, PathCache* paths)
      : home_(home), plan_(plan), paths_(paths) {}

  void script(std::string_view text, int depth, const std::string& origin,
              std::vector<std::string> cwds) {
    ShellParse parsed = parse_shell(text, depth);
    for (auto& p : parsed.problems) plan_.problems.push_back(std::move(p));
    for (const auto& cmd : parsed.commands) {
      CommandUnit u = from_simple(cmd, cwds);
      if (!origin.empty() && u.origin.empty()) u.origin = origin;
      track_cd(u, cwds);
      expand(std::move(u), 0);
    }
  }

 private:
  CommandUnit from_simple(const SimpleCommand& cmd, const std::vector<std::string>& cwds) {
    CommandUnit u;
    u.depth = cmd.depth;
    u.origin = cmd.origin;
    u.cwds = cwds;
    for (const auto& [name, value] : cmd.assignments) {
      u.env.push_back(name);
      u.assigns.push_back({name, to_arg(value), cmd.words.empty() ? "assignment" : "prefix"});
      expansion_assignments(value, u.assigns);
    }
    for (const auto& w : cmd.words) {
      u.argv.push_back(to_arg(w));
      expansion_assignments(w, u.assigns);
    }
    for (const auto& r : cmd.redirects) expansion_assignments(r.target, u.assigns);
    if (!cmd.redirects.empty())
      for (const auto& a : u.argv)
        if (is_fd_variable_word(a))
          u.assigns.push_back(
              {a.text.substr(1, a.text.size() - 2), unknown_value(), "{NAME} redirection"});
    for (const auto& r : cmd.redirects) {
      // `< <(cmd)`, `> >(cmd)`: a pipe to a command that is judged itself, not a file.
      if (is_process_substitution(r.target)) continue;
      const std::string via =
          "redirect " + (r.fd >= 0 ? std::to_string(r.fd) : std::string()) + r.op;
      for (const auto& cwd : cwds) {
        if (r.reads()) u.reads.push_back({to_arg(r.target), cwd, via});
        if (r.writes()) u.writes.push_back({to_arg(r.target), cwd, via});
      }
    }
    return u;
  }

  // `cd X` changes where later relative paths point. Subshells and pipelines may undo it,
  // so the old directories stay candidates and each path is judged against all of them.
  void track_cd(const CommandUnit& u, std::vector<std::string>& cwds) {
    if (u.argv.empty() || !u.argv[0].known || (u.argv[0].text != "cd" && u.argv[0].text != "pushd"))
      return;
    const Arg* target = nullptr;
    for (std::size_t i = 1; i < u.argv.size(); ++i)
      if (!is_flag_word(u.argv[i])) {
        target = &u.argv[i];
        break;
      }
    // With CDPATH set earlier in the line (or by a name hidden behind an expansion), `cd .ssh`
    // may land in any of its directories: `CDPATH=~ cd .ssh` is ~/.ssh.
    auto sets_cdpath = [](const CommandUnit& v) {
      return std::any_of(v.assigns.begin(), v.assigns.end(),
                         [](const Assignment& a) { return a.name == "CDPATH" || a.name.empty(); });
    };
    const bool cdpath =
        sets_cdpath(u) || std::any_of(plan_.units.begin(), plan_.units.end(), sets_cdpath);
    const bool searched = target != nullptr && target->known && !target->home &&
                          target->text != "-" && target->text[0] != '/' &&
                          target->text.rfind("./", 0) != 0 && target->text.rfind("../", 0) != 0 &&
                          target->text != "." && target->text != "..";
    std::vector<std::string> next = cwds;
    for (const auto& cwd : cwds) {
      std::string moved;
      if (cdpath && searched) moved = "";  // not known
      else if (target == nullptr) moved = home_;
      else if (target->home) moved = lexical_absolute("." + target->text, home_);
      else if (target->known && target->text != "-" && !cwd.empty())
        moved = paths_ != nullptr ? paths_->canonical(target->text, cwd)
                                  : canonical_path(target->text, cwd);
      if (std::find(next.begin(), next.end(), moved) == next.end()) next.push_back(moved);
    }
    if (next.size() > 8) next = {cwds.front(), ""};
    cwds = std::move(next);
  }

  void finish(CommandUnit u) {
    builtin_assignments(u);
    normalise_flags(u);
    add_operand_writes(u);
    plan_.units.push_back(std::move(u));
  }

  // Splits off the wrapper's own argv [0, start) as a rules-only unit and continues with
  // the inner command argv[start..].
  void split(CommandUnit u, std::size_t start, const WrapperSpec& spec, int level,
             std::vector<Assignment> extra_env = {}, bool stdin_args = false) {
    CommandUnit inner;
    inner.argv.assign(u.argv.begin() + static_cast<std::ptrdiff_t>(start), u.argv.end());
    if (stdin_args) inner.argv.push_back(unknown_arg("<stdin words>"));
    inherit_env(inner, u, std::move(extra_env));
    inner.cwds = u.cwds;
    inner.depth = u.depth;
    inner.origin = u.origin;
    inner.wrapper = std::string(spec.name);
    u.argv.resize(start);
    u.rules_only = true;
    finish(std::move(u));
    expand(std::move(inner), level + 1);
  }

  void expand(CommandUnit u, int level) {
    if (u.argv.empty()) return finish(std::move(u));
    const Arg& a0 = u.argv[0];
    if (!a0.known) {
      u.problems.push_back("the program name is an expansion (" + a0.text + ")");
      return finish(std::move(u));
    }
    if (level > 8) {
      u.problems.push_back("wrappers nested too deeply");
      return finish(std::move(u));
    }
    std::string_view name = base_name(a0.text);
    if (runs_code_from_text(name)) {
      u.problems.push_back("'" + std::string(name) + "' runs code from text");
      return finish(std::move(u));
    }
    const WrapperSpec* spec = find_wrapper(name);
    if (spec == nullptr) return finish(std::move(u));
    switch (spec->kind) {
      case WrapKind::kFind: return expand_find(std::move(u), level);
      case WrapKind::kShell: return expand_shell(std::move(u), *spec, level);
      case WrapKind::kBusybox:
        if (u.argv.size() > 1 && u.argv[1].known && u.argv[1].text[0] != '-')
          return split(std::move(u), 1, *spec, level);
        return finish(std::move(u));
      default: return expand_prefix(std::move(u), *spec, level);
    }
  }

  // Walks the wrapper's options by its spec. Returns the index of the first operand, or
  // npos (with a problem recorded) when an expansion hides where the options end.
  std::size_t skip_options(CommandUnit& u, const WrapperSpec& spec, bool& lookup_only,
                           std::string* split_string) {
    std::size_t i = 1;
    while (i < u.argv.size()) {
      const Arg& a = u.argv[i];
      if (!a.known) {
        if (a.may_be_flag()) {
          u.problems.push_back("an expansion among " + std::string(spec.name) + "'s options");
          return std::string::npos;
        }
        return i;
      }
      if (a.text == "--") return i + 1;
      if (a.text.size() < 2 || a.text[0] != '-') return i;
      if (a.text[1] == '-') {
        std::string opt = a.text.substr(0, a.text.find('='));
        bool takes =
            std::find(spec.value_long.begin(), spec.value_long.end(), opt) != spec.value_long.end();
        if (opt == "--split-string" && split_string != nullptr) {
          *split_string = a.text.find('=') != std::string::npos
                              ? a.text.substr(a.text.find('=') + 1)
                          : i + 1 < u.argv.size() ? u.argv[i + 1].text
                                                  : "";
        }
        i += (takes && a.text.find('=') == std::string::npos) ? 2 : 1;
        continue;
      }
      std::size_t next = i + 1;
      for (std::size_t k = 1; k < a.text.size(); ++k) {
        char c = a.text[k];
        if (spec.lookup_flags.find(c) != std::string_view::npos) lookup_only = true;
        if (spec.value_short.find(c) != std::string_view::npos) {
          std::string value = k + 1 < a.text.size()   ? a.text.substr(k + 1)
                              : i + 1 < u.argv.size() ? u.argv[i + 1].text
                                                      : "";
          if (c == 'S' && split_string != nullptr) *split_string = value;
          if (k + 1 == a.text.size()) next = i + 2;
          break;
        }
      }
      i = next;
    }
    return i;
  }

  void expand_prefix(CommandUnit u, const WrapperSpec& spec, int level) {
    bool lookup_only = false;
    std::string split_string;
    std::size_t i =
        skip_options(u, spec, lookup_only, spec.kind == WrapKind::kEnv ? &split_string : nullptr);
    if (i == std::string::npos || lookup_only) return finish(std::move(u));
    i += static_cast<std::size_t>(spec.fixed_operands);
    std::vector<Assignment> env;
    if (spec.kind == WrapKind::kEnv) {
      for (; i < u.argv.size() && u.argv[i].known &&
             u.argv[i].text.find('=') != std::string::npos && u.argv[i].text[0] != '=';
           ++i)
        env.push_back(assignment_word(u.argv[i], "env"));
      if (i < u.argv.size() && !u.argv[i].known &&
          u.argv[i].prefix.find('=') == std::string::npos) {
        u.problems.push_back("env: an expansion where the command or NAME=VALUE should be");
        return finish(std::move(u));
      }
      if (!split_string.empty())
        return expand_split_string(std::move(u), i, split_string, std::move(env), level);
    }
    if (i >= u.argv.size()) return finish(std::move(u));  // no inner command: judge it as is
    split(std::move(u), i, spec, level, env, spec.kind == WrapKind::kXargs);
  }

  // env -S 'rm -rf x' splits its argument into words, which become the command.
  void expand_split_string(CommandUnit u, std::size_t i, const std::string& text,
                           std::vector<Assignment> env, int level) {
    ShellParse words = parse_shell(text, u.depth + 1);
    if (!words.problems.empty() || words.commands.size() != 1 ||
        !words.commands[0].redirects.empty()) {
      u.problems.push_back("env -S: the split string is not a plain word list");
      return finish(std::move(u));
    }
    CommandUnit inner;
    for (const auto& w : words.commands[0].words) inner.argv.push_back(to_arg(w));
    inner.argv.insert(inner.argv.end(), u.argv.begin() + static_cast<std::ptrdiff_t>(i),
                      u.argv.end());
    for (const auto& [n, v] : words.commands[0].assignments)
      env.push_back({n, to_arg(v), "env -S"});
    inherit_env(inner, u, std::move(env));
    inner.cwds = u.cwds;
    inner.depth = u.depth;
    inner.origin = u.origin;
    inner.wrapper = "env -S";
    u.rules_only = true;
    u.argv.resize(std::min(i, u.argv.size()));
    finish(std::move(u));
    expand(std::move(inner), level + 1);
  }

  void expand_find(CommandUnit u, int level) {
    std::vector<CommandUnit> inners;
    for (std::size_t i = 1; i < u.argv.size(); ++i) {
      const Arg& a = u.argv[i];
      if (!a.known ||
          (a.text != "-exec" && a.text != "-execdir" && a.text != "-ok" && a.text != "-okdir"))
        continue;
      CommandUnit inner;
      std::size_t k = i + 1;
      for (; k < u.argv.size(); ++k) {
        const Arg& w = u.argv[k];
        if (w.known && (w.text == ";" || w.text == "+")) break;
        if (w.known && w.text.find("{}") != std::string::npos) {
          Arg path = w;  // a found path: not a flag, value unknown
          path.known = false;
          path.prefix = w.text.substr(0, w.text.find("{}"));
          if (path.prefix.empty()) path.prefix = "./";
          inner.argv.push_back(path);
        } else {
          inner.argv.push_back(w);
        }
      }
      if (k >= u.argv.size())
        u.problems.push_back("find " + a.text + " without a terminating ';' or '+'");
      inherit_env(inner, u, {});
      inner.cwds = u.cwds;
      inner.depth = u.depth;
      inner.origin = u.origin;
      inner.wrapper = "find " + a.text;
      if (!inner.argv.empty()) inners.push_back(std::move(inner));
      i = k;
    }
    // The executed commands first, so the most specific rule is the one named; find
    // itself is judged as a command too (-delete, -fprint write).
    for (auto& inner : inners) expand(std::move(inner), level + 1);
    finish(std::move(u));
  }

  // sh [options] -c SCRIPT [name args...]: the script is parsed one level deeper.
  void expand_shell(CommandUnit u, const WrapperSpec& spec, int level) {
    bool has_c = false;
    std::size_t i = 1;
    for (; i < u.argv.size(); ++i) {
      const Arg& a = u.argv[i];
      if (!a.known) break;
      if (a.text == "--" || a.text == "-") {
        ++i;
        break;
      }
      if (a.text.size() < 2 || (a.text[0] != '-' && a.text[0] != '+')) break;
      if (a.text[1] == '-') {
        if (std::find(spec.value_long.begin(), spec.value_long.end(), a.text) !=
            spec.value_long.end())
          ++i;
        continue;
      }
      bool value = false;
      for (std::size_t k = 1; k < a.text.size(); ++k) {
        if (a.text[k] == 'c' && a.text[0] == '-') has_c = true;
        if (spec.value_short.find(a.text[k]) != std::string_view::npos) value = true;
      }
      if (value) ++i;
    }
    if (!has_c) return finish(std::move(u));  // runs a script file or stdin: a plain command
    if (i >= u.argv.size()) {
      u.problems.push_back(std::string(spec.name) + " -c without a script");
      return finish(std::move(u));
    }
    if (!u.argv[i].known) {
      u.problems.push_back(std::string(spec.name) + " -c with a script that is an expansion");
      return finish(std::move(u));
    }
    std::string text = u.argv[i].text;
    int depth = u.depth + 1;
    std::vector<std::string> cwds = u.cwds;
    std::string origin = std::string(spec.name) + " -c";
    u.argv.resize(i);
    u.rules_only = true;
    finish(std::move(u));
    if (depth > kMaxShellDepth) {
      plan_.problems.push_back("sh -c nested too deeply");
      return;
    }
    (void)level;
    script(text, depth, origin, cwds);
  }

  const std::string& home_;
  LinePlan& plan_;
  PathCache* paths_;
};

}  // namespace

void normalise_flags(CommandUnit& u) {
  u.flags.clear();
  u.operands.clear();
  u.flags_unknown = false;
  bool after_dashdash = false;
  for (std::size_t i = 1; i < u.argv.size(); ++i) {
    const Arg& a = u.argv[i];
    if (after_dashdash) {
      u.operands.push_back(i);
      continue;
    }
    if (!a.known) {
      if (a.prefix.size() > 2 && a.prefix.rfind("--", 0) == 0) {
        u.flags.push_back(a.prefix.substr(0, a.prefix.find('=')));
        if (a.prefix.find('=') == std::string::npos) u.flags_unknown = true;
      } else if (a.may_be_flag()) {
        u.flags_unknown = true;
        u.operands.push_back(i);  // it may as well be an operand
      } else {
        u.operands.push_back(i);
      }
      continue;
    }
    const std::string& t = a.text;
    if (t == "--") {
      after_dashdash = true;
      continue;
    }
    if (t.size() < 2 || t[0] != '-') {
      u.operands.push_back(i);
      continue;
    }
    if (t[1] == '-') {
      u.flags.push_back(t.substr(0, t.find('=')));
      continue;
    }
    u.flags.push_back(t);  // as written: single-dash long options (find -exec, -delete)
    for (std::size_t k = 1; k < t.size(); ++k) {
      unsigned char c = static_cast<unsigned char>(t[k]);
      if (!std::isalnum(c)) break;  // -i.bak, -n5: the rest is a value
      u.flags.push_back(std::string("-") + t[k]);
    }
  }
}

LinePlan plan_line(std::string_view line, const std::string& cwd, const std::string& home,
                   PathCache* paths) {
  LinePlan plan;
  Planner planner(home, plan, paths);
  planner.script(line, 0, "", {cwd});
  for (auto& u : plan.units) {
    if (u.argv.empty() || !u.argv[0].known) continue;
    const std::string& a0 = u.argv[0].text;
    bool valid = true;
    (void)nfc(a0, valid);
    if (!valid) u.problems.push_back("the program name is not valid UTF-8");
    if (std::any_of(a0.begin(), a0.end(), [](char c) {
          unsigned char b = static_cast<unsigned char>(c);
          return b >= 0x80 || b < 0x20 || b == 0x7f;
        }))
      u.problems.push_back("the program name has non-ASCII or control characters");
  }
  return plan;
}

}  // namespace moat::policy
