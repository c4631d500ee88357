// policy/code_env.cc: the table of variables that load code or choose the executable, and
// the check of one assignment against it.
//
// Every row applies whatever program the unit runs: the environment is inherited by all it
// starts (`npm test` runs node, `make` runs git, `timeout` runs anything), so scoping a row to
// the program that reads the variable would let any other allowed program carry it there. A
// row names its reader in its reason instead, and a value that runs nothing (`GIT_PAGER=cat`,
// a PATH of system directories) is let through by the row's value check.
#include "policy/code_env.h"

#include <algorithm>
#include <cctype>

#include "policy/globs.h"
#include "policy/paths.h"

namespace moat::policy {
namespace {

constexpr CodeEnvValue kNone = CodeEnvValue::kNone;
constexpr CodeEnvValue kSearchPath = CodeEnvValue::kSearchPath;
constexpr CodeEnvValue kWords = CodeEnvValue::kWords;
constexpr CodeEnvValue kProgram = CodeEnvValue::kProgram;
constexpr CodeEnvValue kPlainOptions = CodeEnvValue::kPlainOptions;

// Sources: ld.so(8), bash(1) INVOCATION and Shell Variables, git(1) ENVIRONMENT VARIABLES and
// git-config(1) ENVIRONMENT, node(1), python(1), perlrun(1), ruby(1), the JDK's java launcher,
// less(1), iconv_open(3), zsh(1) STARTUP FILES, make(1) and GNU make's "Variables from the
// Environment", npm-config(7), cargo's "Environment Variables", go help environment.
// Tables are laid out by hand, one row per line.
// clang-format off
constexpr CodeEnvRow kTable[] = {
    // The dynamic loader: every dynamically linked program.
    {"LD_PRELOAD", kNone, "", "the dynamic loader loads these libraries into the program before its own", true},
    {"LD_AUDIT", kNone, "", "the dynamic loader loads these auditing libraries into the program", true},
    {"LD_LIBRARY_PATH", kSearchPath, "", "the dynamic loader looks for the program's libraries in these directories first", true},
    {"GCONV_PATH", kSearchPath, "", "glibc's iconv loads character set modules from these directories", true},
    // The shell and exec*p: which file a bare program name runs.
    {"PATH", kSearchPath, "", "the shell and every exec*p caller pick programs from these directories"},
    {"BASH_ENV", kNone, "", "a non-interactive bash sources this file before running anything"},
    {"ENV", kNone, "", "sh and an interactive bash source this file at start"},
    {"BASH_FUNC_*", kNone, "", "bash imports this as a shell function, which can replace any command name"},
    {"SHELLOPTS", kNone, "", "bash starts with these options set (xtrace runs PS4's substitutions)"},
    {"BASHOPTS", kNone, "", "bash starts with these shopt options set"},
    {"PS4", kNone, "", "bash expands it, substitutions included, before every traced command"},
    {"PROMPT_COMMAND", kNone, "", "an interactive bash runs it before every prompt"},
    {"PS0", kNone, "", "an interactive bash expands it, substitutions included, before every command"},
    {"BASH_LOADABLES_PATH", kSearchPath, "", "bash's enable -f loads builtins from these directories"},
    {"ZDOTDIR", kSearchPath, "", "zsh sources .zshenv from this directory at every start"},
    {"FPATH", kSearchPath, "", "zsh and ksh autoload functions, which can replace any command name, from these directories"},
    {"SHELL", kProgram, "", "script, vim, and others run it as the shell"},
    {"HOME", kSearchPath, "", "git, npm, python (user site-packages), shells and most tools read configuration that names programs, or load code, from below it"},
    {"XDG_CONFIG_HOME", kSearchPath, "", "git and others read configuration that names programs from below it"},
    // Interpreters: options and module paths that load code before the program's own.
    {"NODE_OPTIONS", kNone, "", "node takes these as options (--require, --import load a module first)"},
    {"NODE_PATH", kSearchPath, "", "node resolves modules from these directories"},
    {"NODE_REPL_EXTERNAL_MODULE", kNone, "", "node loads this module instead of its REPL"},
    {"npm_config_*", kNone, "", "npm takes it as configuration, in any case (script-shell, node-options, userconfig name programs and code to run)"},
    {"PYTHONPATH", kSearchPath, "", "python imports modules (sitecustomize too) from these directories first"},
    {"PYTHONHOME", kSearchPath, "", "python loads its standard library from this directory"},
    {"PYTHONSTARTUP", kNone, "", "an interactive python runs this file at start"},
    {"PYTHONBREAKPOINT", kWords, "|0", "python imports and calls this on breakpoint()"},
    {"PYTHONUSERBASE", kSearchPath, "", "python runs the .pth files of this directory's site-packages at start"},
    {"PYTHONWARNINGS", kPlainOptions, "", "python imports the module a warning category names (ignore::mod.Warning)"},
    {"PERL5OPT", kNone, "", "perl takes these as options (-M loads a module first)"},
    {"PERL5LIB", kSearchPath, "", "perl loads modules from these directories first"},
    {"PERLLIB", kSearchPath, "", "perl loads modules from these directories first"},
    {"PERL5DB", kNone, "", "perl -d runs this code as its debugger"},
    {"RUBYOPT", kNone, "", "ruby takes these as options (-r loads a library first)"},
    {"RUBYLIB", kSearchPath, "", "ruby loads libraries from these directories first"},
    {"GEM_PATH", kSearchPath, "", "rubygems loads gems from these directories"},
    {"GEM_HOME", kSearchPath, "", "rubygems loads gems from this directory"},
    {"BUNDLE_GEMFILE", kNone, "", "bundler evaluates this Gemfile, ruby code"},
    {"JAVA_TOOL_OPTIONS", kNone, "", "every JVM takes these as options (-javaagent loads code)"},
    {"JDK_JAVA_OPTIONS", kNone, "", "the java launcher takes these as options (-javaagent loads code)"},
    {"_JAVA_OPTIONS", kNone, "", "every JVM takes these as options (-javaagent loads code)"},
    {"CLASSPATH", kSearchPath, "", "the JVM loads classes from these directories"},
    // git: its pager, editors, ssh and askpass commands, and configuration from the
    // environment (which can name any of them, core.fsmonitor and hooks too).
    {"GIT_PAGER", kWords, "|cat", "git runs it as its pager"},
    {"PAGER", kWords, "|cat", "git, man and others run it as their pager"},
    {"MANPAGER", kWords, "|cat", "man runs it as its pager"},
    {"GIT_EDITOR", kWords, "true|:", "git runs it to edit commit messages"},
    {"GIT_SEQUENCE_EDITOR", kWords, "true|:", "git rebase -i runs it to edit the todo list"},
    {"EDITOR", kWords, "true|:", "git and others run it to edit text"},
    {"VISUAL", kWords, "true|:", "git and others run it to edit text"},
    {"GIT_SSH", kNone, "", "git runs it instead of ssh"},
    {"GIT_SSH_COMMAND", kNone, "", "git runs it instead of ssh"},
    {"GIT_PROXY_COMMAND", kNone, "", "git runs it to connect to git:// remotes"},
    {"GIT_ASKPASS", kNone, "", "git runs it to ask for credentials"},
    {"SSH_ASKPASS", kNone, "", "ssh and git run it to ask for credentials"},
    {"GIT_EXTERNAL_DIFF", kNone, "", "git diff runs it instead of its own diff"},
    {"GIT_EXEC_PATH", kSearchPath, "", "git runs its subcommands from this directory"},
    {"GIT_TEMPLATE_DIR", kNone, "", "git init and clone copy hooks from this directory"},
    {"GIT_CONFIG_NOSYSTEM", kWords, "|0|1|true|false", "git skips the system configuration"},
    {"GIT_CONFIG*", kNone, "", "git reads configuration from it (GIT_CONFIG_COUNT/KEY_n/VALUE_n, GIT_CONFIG_PARAMETERS, files), which can name programs to run"},
    {"GIT_COMMON_DIR", kNone, "", "git reads this repository's config, which can name programs to run (core.fsmonitor, core.pager), and runs its hooks"},
    {"GIT_DIR", kNone, "", "git uses this repository, whose config can name programs to run (core.fsmonitor, core.pager)"},
    {"GIT_WORK_TREE", kNone, "", "git treats this directory as the work tree, outside what the rule saw"},
    // Build tools: make's options and makefiles, compilers named by variable, cargo's and
    // go's wrappers and runners.
    {"MAKEFILES", kNone, "", "make reads these makefiles first, whose recipes it runs"},
    {"MAKEFLAGS", kPlainOptions, "", "make takes these as options and variable definitions (SHELL=, --eval=)"},
    {"GNUMAKEFLAGS", kPlainOptions, "", "GNU make takes these as options and variable definitions"},
    {"MFLAGS", kPlainOptions, "", "make takes these as options"},
    {"CC", kProgram, "", "make's built-in rules, cgo, cargo's cc crate and configure scripts run it as the C compiler"},
    {"CXX", kProgram, "", "make's built-in rules and build scripts run it as the C++ compiler"},
    {"CPP", kProgram, "", "make's built-in rules and build scripts run it as the preprocessor"},
    {"LD", kProgram, "", "build scripts run it as the linker"},
    {"AR", kProgram, "", "make's built-in rules and build scripts run it as the archiver"},
    {"AS", kProgram, "", "make's built-in rules run it as the assembler"},
    {"FC", kProgram, "", "make's built-in rules run it as the Fortran compiler"},
    {"RUSTC", kProgram, "", "cargo runs it as the compiler"},
    {"RUSTDOC", kProgram, "", "cargo runs it as rustdoc"},
    {"RUSTC_WRAPPER", kProgram, "", "cargo runs it in front of every compiler call"},
    {"RUSTC_WORKSPACE_WRAPPER", kProgram, "", "cargo runs it in front of the workspace's compiler calls"},
    {"CARGO_BUILD_*", kProgram, "", "cargo takes it as build configuration (rustc, rustc-wrapper, rustdoc name programs)"},
    {"CARGO_TARGET_*", kProgram, "", "cargo runs it as a target's runner or linker"},
    {"CARGO_HOME", kSearchPath, "", "cargo reads config.toml from it, which names programs to run"},
    {"RUSTFLAGS", kPlainOptions, "", "rustc takes these as options (-C linker=, -Z plugins name programs)"},
    {"CARGO_ENCODED_RUSTFLAGS", kPlainOptions, "", "rustc takes these as options"},
    {"GOFLAGS", kPlainOptions, "", "go takes these as flags (-toolexec=, -exec= name programs to run)"},
    {"GOENV", kWords, "off", "go reads configuration from this file (GOFLAGS, CC)"},
    // Others that run a command named in a variable.
    {"LESSOPEN", kNone, "", "less runs it as an input preprocessor"},
    {"LESSCLOSE", kNone, "", "less runs it after an input preprocessor"},
    // Not in the table: IFS (bash and dash do not import it, so it only changes how the one
    // command it prefixes splits words, as in `IFS= read -r line`).
};
// clang-format on

const RuleRef kCodeEnvRule{"builtin.code-env", "builtin", "", 0};

// `export $X`, `read $N`: any variable of the table could be the one set.
constexpr CodeEnvRow kUnknownName{"", kNone, "", "an expansion hides which variable it sets"};

bool is_harmless_word(std::string_view list, const Arg& v) {
  if (!v.known) return false;
  std::size_t i = 0;
  while (i <= list.size()) {
    std::size_t end = std::min(list.find('|', i), list.size());
    if (list.substr(i, end - i) == v.text) return true;
    i = end + 1;
  }
  return false;
}

// One ':'-separated entry of a search path.
struct Entry {
  enum Kind { kPath, kHomePath, kOldValue, kUnknown } kind = kPath;
  std::string text;  // kPath: the directory as written; kHomePath: the rest after ~ or $HOME
};

Entry classify(const std::vector<Segment>& pieces, const std::string& name) {
  auto literal_from = [&](std::size_t first, std::string& out) {
    for (std::size_t i = first; i < pieces.size(); ++i) {
      if (pieces[i].kind != SegKind::kLiteral) return false;
      out += pieces[i].text;
    }
    return true;
  };
  Entry e;
  if (literal_from(0, e.text)) return e;
  e.text.clear();
  const Segment& first = pieces[0];
  // Only PATH's old value is known to be set (moatd sets it to system directories): an unset
  // LD_LIBRARY_PATH or PYTHONPATH would leave an empty entry, which means the cwd.
  if (pieces.size() == 1 && first.kind == SegKind::kVar && first.text == name && name == "PATH")
    return {Entry::kOldValue, ""};
  bool home = (first.kind == SegKind::kTilde && first.text.empty()) ||
              (first.kind == SegKind::kVar && first.text == "HOME");
  if (home && literal_from(1, e.text)) {
    e.kind = Entry::kHomePath;
    return e;
  }
  return {Entry::kUnknown, ""};
}

// Splits a value into entries. A known value splits on every ':'; an unknown one keeps its
// pieces, so `$PATH` (the old value) differs from a literal '$PATH' (a directory of that name).
std::vector<Entry> split_entries(const Arg& v, const std::string& name) {
  std::vector<Entry> out;
  std::vector<Segment> pieces;
  auto close = [&] {
    out.push_back(classify(pieces, name));
    pieces.clear();
  };
  const std::vector<Segment> known = {Segment{SegKind::kLiteral, v.text, false, 0}};
  for (const auto& s : v.known ? known : v.segs) {
    if (s.kind != SegKind::kLiteral) {
      pieces.push_back(s);
      continue;
    }
    std::size_t i = 0;
    for (std::size_t colon; (colon = s.text.find(':', i)) != std::string::npos; i = colon + 1) {
      if (colon > i)
        pieces.push_back({SegKind::kLiteral, s.text.substr(i, colon - i), s.quoted, 0});
      close();
    }
    if (i < s.text.size()) pieces.push_back({SegKind::kLiteral, s.text.substr(i), s.quoted, 0});
  }
  close();
  return out;
}

// True when the entry names a directory sandboxed code cannot have written.
bool entry_is_safe(const Entry& e, const std::vector<std::string>& cwds,
                   const CodeEnvContext& ctx) {
  // /proc and /dev hold magic links (/proc/self/cwd, /dev/fd/3) to the working directory or to
  // any directory a descriptor names: their text says nothing of where they lead.
  auto outside = [&](const std::string& dir) {
    return !is_under(dir, "/proc") && !is_under(dir, "/dev") &&
           std::none_of(ctx.writable_roots.begin(), ctx.writable_roots.end(),
                        [&](const std::string& r) { return is_under(dir, r); });
  };
  switch (e.kind) {
    case Entry::kOldValue: return true;  // what the sandbox started with
    case Entry::kUnknown: return false;
    case Entry::kHomePath:
      // Inside the sandbox HOME is /tmp, writable (sandbox/session_init.cc), whatever home the
      // policy's path rules use: `PATH=~/bin:$PATH` runs what an earlier command put there.
      return false;
    case Entry::kPath: break;
  }
  if (!e.text.empty() && e.text[0] == '/') return outside(canonical_path(e.text, "/"));
  // "" and relative entries are looked up from the working directory.
  return !cwds.empty() && std::all_of(cwds.begin(), cwds.end(), [&](const std::string& cwd) {
    return !cwd.empty() && outside(canonical_path(e.text.empty() ? "." : e.text, cwd));
  });
}

bool is_harmless_search_path(const Arg& v, const std::string& name,
                             const std::vector<std::string>& cwds, const CodeEnvContext& ctx) {
  if (!v.known && v.segs.empty()) return false;  // from stdin or a list we cannot see
  auto entries = split_entries(v, name);
  return std::all_of(entries.begin(), entries.end(),
                     [&](const Entry& e) { return entry_is_safe(e, cwds, ctx); });
}

bool is_outside_writable(const std::string& dir, const CodeEnvContext& ctx) {
  return entry_is_safe(Entry{Entry::kPath, dir}, {}, ctx);
}

// CC=clang, CC=/usr/bin/gcc-12: a program of the system. Words after it (CC="gcc -B./x") are
// options that can load anything, and a relative path is the workspace's.
bool is_harmless_program(const Arg& v, const CodeEnvContext& ctx) {
  if (!v.known) return false;
  if (v.text.find_first_of(" \t\n") != std::string::npos) return false;
  if (v.text.find('/') == std::string::npos) return true;
  return v.text[0] == '/' && is_outside_writable(v.text, ctx);
}

bool is_plain_options(const Arg& v) {
  return v.known && std::all_of(v.text.begin(), v.text.end(), [](char c) {
           return std::isalnum(static_cast<unsigned char>(c)) ||
                  std::string_view(" -_,:").find(c) != std::string_view::npos;
         });
}

}  // namespace

std::span<const CodeEnvRow> code_env_table() { return kTable; }

const RuleRef& code_env_rule() { return kCodeEnvRule; }

bool is_read_at_exec(std::string_view name) {
  return std::any_of(std::begin(kTable), std::end(kTable),
                     [&](const CodeEnvRow& row) { return row.at_exec && row.name == name; });
}

const CodeEnvRow* code_env_hit(const Assignment& a, const std::vector<std::string>& cwds,
                               const CodeEnvContext& ctx) {
  if (a.name.empty()) return &kUnknownName;
  std::string lower = a.name;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const auto& row : kTable) {
    const bool any_case =
        std::any_of(row.name.begin(), row.name.end(), [](char c) { return c >= 'a' && c <= 'z'; });
    if (!glob::word_matches(row.name, any_case ? lower : a.name)) continue;
    switch (row.harmless_when) {
      case CodeEnvValue::kNone: return &row;
      case CodeEnvValue::kWords: return is_harmless_word(row.harmless, a.value) ? nullptr : &row;
      case CodeEnvValue::kSearchPath:
        return is_harmless_search_path(a.value, a.name, cwds, ctx) ? nullptr : &row;
      case CodeEnvValue::kProgram: return is_harmless_program(a.value, ctx) ? nullptr : &row;
      case CodeEnvValue::kPlainOptions: return is_plain_options(a.value) ? nullptr : &row;
    }
  }
  return nullptr;
}

}  // namespace moat::policy
