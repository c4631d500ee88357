// policy/shell_parse.h: a POSIX shell (plus common bash) parser that yields every simple
// command of a line, at every nesting depth, for the command matcher.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace moat::policy {

// One piece of a word. Only kLiteral pieces have a value known before the shell runs.
enum class SegKind {
  kLiteral,  // text after quote removal
  kGlob,     // an unquoted * ? or [ (pathname expansion)
  kVar,      // $NAME, ${NAME}, $1, $@ ...: text is the name
  kTilde,    // an unquoted leading ~ or ~user: text is the user ("" for ~)
  kSubst,    // $(...), `...`, <(...), >(...), $((...)), ${x:-...}: text is the inner script
  kBrace,    // an unquoted {a,b} or {1..3} brace expansion
};

struct Segment {
  SegKind kind = SegKind::kLiteral;
  std::string text;
  bool quoted = false;  // inside '' or "" (no word splitting, no globbing)
  char opener = 0;      // kSubst: '$' for $(), '`', '<' or '>' for <() >(), 0 otherwise
};

struct Word {
  std::vector<Segment> segs;
  std::string raw;  // as written

  bool is_literal() const;             // every piece known: the value is literal()
  std::string literal() const;         // the value, expansions shown as written ($X, *, ...)
  std::string literal_prefix() const;  // the value up to the first unknown piece
  // An unquoted expansion or glob can become several words (or none) at run time.
  bool may_split() const;
};

struct Redirect {
  int fd = -1;          // explicit io number, or -1
  std::string op;       // "<" ">" ">>" "<>" ">|" "<&" ">&" "&>" "&>>" "<<" "<<-" "<<<"
  Word target;          // file, fd number, here-doc delimiter, or here-string
  bool writes() const;  // the target is a file opened for writing
  bool reads() const;  // the target is a file opened for reading (`<`, `<>`, any fd; not here-docs)
};

struct SimpleCommand {
  std::vector<std::pair<std::string, Word>> assignments;  // NAME=value prefixes
  std::vector<Word> words;                                // argv as words
  std::vector<Redirect> redirects;
  int depth = 0;       // 0: the line itself; +1 per substitution or nested script
  std::string origin;  // "" or how it was reached: "$()", "``", "<()", "here-doc" ...
};

// Limits that keep parsing linear and bounded (POLICY.md class 15: very long argv).
inline constexpr std::size_t kMaxShellBytes = 64 * 1024;
inline constexpr std::size_t kMaxShellWords = 4096;
inline constexpr int kMaxShellDepth = 16;

struct ShellParse {
  std::vector<SimpleCommand> commands;
  // Why (part of) the line cannot be judged statically: syntax errors, function
  // definitions, control characters, limits. Non-empty means "unparseable".
  std::vector<std::string> problems;
};

// Parses `script`. Never fails: what it cannot handle becomes a problem, and whatever
// commands were recognised are still returned so their rules (a deny) keep applying.
ShellParse parse_shell(std::string_view script, int depth = 0);

}  // namespace moat::policy
