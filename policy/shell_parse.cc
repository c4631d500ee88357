// policy/shell_parse.cc: lexer (quoting, expansions, operators, here-docs) and a
// recursive-descent parser (lists, pipelines, compound commands) for shell lines.
// Structure follows POSIX XCU 2.3 (token recognition) and 2.9 (shell commands).
#include "policy/shell_parse.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

namespace moat::policy {

bool Word::is_literal() const {
  return std::all_of(segs.begin(), segs.end(),
                     [](const Segment& s) { return s.kind == SegKind::kLiteral; });
}

std::string Word::literal() const {
  std::string out;
  for (const auto& s : segs) {
    switch (s.kind) {
      case SegKind::kLiteral:
      case SegKind::kGlob:
      case SegKind::kBrace: out += s.text; break;
      case SegKind::kVar: out += "$" + s.text; break;
      case SegKind::kTilde: out += "~" + s.text; break;
      case SegKind::kSubst:
        out += s.opener == '`'                      ? "`" + s.text + "`"
               : s.opener == '<' || s.opener == '>' ? std::string(1, s.opener) + "(" + s.text + ")"
               : s.opener == '$'                    ? "$(" + s.text + ")"
                                                    : s.text;
        break;
    }
  }
  return out;
}

std::string Word::literal_prefix() const {
  std::string out;
  for (const auto& s : segs) {
    if (s.kind != SegKind::kLiteral) break;
    out += s.text;
  }
  return out;
}

bool Word::may_split() const {
  return std::any_of(segs.begin(), segs.end(), [](const Segment& s) {
    return !s.quoted && s.kind != SegKind::kLiteral && s.kind != SegKind::kTilde;
  });
}

bool Redirect::writes() const {
  if (op == ">" || op == ">>" || op == ">|" || op == "<>" || op == "&>" || op == "&>>") return true;
  // ">&word" with a non-number word is bash's "stdout and stderr to file".
  if (op == ">&") {
    std::string v = target.literal();
    return !(v == "-" || (!v.empty() && std::all_of(v.begin(), v.end(), ::isdigit)));
  }
  return false;
}

// "<&word" duplicates a descriptor (a word that is no number is an error in bash); here-docs
// and here-strings carry their text in the line.
bool Redirect::reads() const { return op == "<" || op == "<>"; }

namespace {

enum class TokKind { kWord, kOp, kIoNumber, kNewline, kEnd };

struct Token {
  TokKind kind = TokKind::kEnd;
  std::string op;      // kOp
  Word word;           // kWord
  int io_number = -1;  // kIoNumber
  Word heredoc_body;   // for the delimiter word of << and <<-
};

bool is_blank(char c) { return c == ' ' || c == '\t'; }
bool is_op_char(char c) {
  return c == '|' || c == '&' || c == ';' || c == '<' || c == '>' || c == '(' || c == ')';
}
bool is_name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

bool has_command_subst(std::string_view s) {
  return s.find("$(") != std::string_view::npos || s.find('`') != std::string_view::npos ||
         s.find("<(") != std::string_view::npos || s.find(">(") != std::string_view::npos;
}

class Lexer {
 public:
  Lexer(std::string_view src, std::vector<std::string>& problems)
      : src_(src), problems_(problems) {}

  // Lexes until the end, or with `stop_at_paren` until an unmatched ')', which is left
  // unconsumed at pos(). Returns false on a syntax error (recorded as a problem).
  bool lex(bool stop_at_paren, std::vector<Token>& out) {
    int paren_depth = 0;
    std::vector<std::size_t> pending_heredocs;  // indexes of delimiter tokens
    while (pos_ < src_.size()) {
      char c = src_[pos_];
      if (is_blank(c)) {
        ++pos_;
      } else if (c == '\\' && pos_ + 1 < src_.size() && src_[pos_ + 1] == '\n') {
        pos_ += 2;  // line continuation
      } else if (c == '#') {
        while (pos_ < src_.size() && src_[pos_] != '\n') ++pos_;
      } else if (c == '\n') {
        ++pos_;
        Token t;
        t.kind = TokKind::kNewline;
        out.push_back(std::move(t));
        for (std::size_t idx : pending_heredocs)
          if (!read_heredoc_body(out[idx])) return false;
        pending_heredocs.clear();
      } else if ((c == '<' || c == '>') && pos_ + 1 < src_.size() && src_[pos_ + 1] == '(') {
        if (!lex_word(out)) return false;  // process substitution starts a word
      } else if (is_op_char(c)) {
        if (c == ')' && paren_depth == 0 && stop_at_paren) break;
        std::string op = lex_operator();
        if (op == "(") ++paren_depth;
        if (op == ")") --paren_depth;
        Token t;
        t.kind = TokKind::kOp;
        t.op = op;
        out.push_back(std::move(t));
        if (op == "<<" || op == "<<-") {
          while (pos_ < src_.size() && is_blank(src_[pos_])) ++pos_;
          if (pos_ >= src_.size() || is_op_char(src_[pos_]) || src_[pos_] == '\n')
            return error("here-doc operator without a delimiter");
          if (!lex_word(out)) return false;
          strip_tabs_.push_back(op == "<<-");
          out.back().heredoc_body.raw = op;  // marks the token as a delimiter
          pending_heredocs.push_back(out.size() - 1);
        }
      } else {
        if (!lex_word(out)) return false;
      }
    }
    if (stop_at_paren && (pos_ >= src_.size() || src_[pos_] != ')'))
      return error("unterminated $( or <(");
    for (std::size_t idx : pending_heredocs)
      if (!read_heredoc_body(out[idx])) return false;
    return true;
  }

  std::size_t pos() const { return pos_; }

 private:
  bool error(const std::string& what) {
    problems_.push_back("syntax: " + what + " at byte " + std::to_string(pos_));
    return false;
  }

  std::string lex_operator() {
    static const char* const kOps[] = {";;&", "&>>", "<<<", "<<-", "&&", "||", "|&", ";;",
                                       ";&",  "<<",  "<>",  "<&",  ">>", ">|", ">&", "&>",
                                       "|",   "&",   ";",   "<",   ">",  "(",  ")"};
    for (const char* op : kOps) {
      std::string_view o(op);
      if (src_.substr(pos_, o.size()) == o) {
        pos_ += o.size();
        return std::string(o);
      }
    }
    return std::string(1, src_[pos_++]);  // unreachable: is_op_char covers every start
  }

  static void add(Word& w, SegKind kind, std::string text, bool quoted, char opener = 0) {
    if (kind == SegKind::kLiteral && !w.segs.empty() && w.segs.back().kind == SegKind::kLiteral &&
        w.segs.back().quoted == quoted) {
      w.segs.back().text += text;
      return;
    }
    w.segs.push_back(Segment{kind, std::move(text), quoted, opener});
  }

  bool lex_word(std::vector<Token>& out) {
    Word w;
    std::size_t start = pos_;
    bool any = false;  // an empty quoted string '' is still a word
    while (pos_ < src_.size()) {
      char c = src_[pos_];
      if (is_blank(c) || c == '\n') break;
      if ((c == '<' || c == '>') && pos_ + 1 < src_.size() && src_[pos_ + 1] == '(') {
        if (!lex_paren_subst(w, 2, false)) return false;
        any = true;
        continue;
      }
      if (is_op_char(c)) break;
      any = true;
      if (c == '\\') {
        if (pos_ + 1 >= src_.size()) {
          ++pos_;
          continue;
        }
        if (src_[pos_ + 1] == '\n') {
          pos_ += 2;
          continue;
        }
        add(w, SegKind::kLiteral, std::string(1, src_[pos_ + 1]), true);
        pos_ += 2;
      } else if (c == '\'') {
        std::size_t end = src_.find('\'', pos_ + 1);
        if (end == std::string_view::npos) return error("unterminated single quote");
        add(w, SegKind::kLiteral, std::string(src_.substr(pos_ + 1, end - pos_ - 1)), true);
        pos_ = end + 1;
      } else if (c == '"') {
        ++pos_;
        if (!lex_dquote(w, '"')) return false;
      } else if (c == '$') {
        if (!lex_dollar(w, false)) return false;
      } else if (c == '`') {
        if (!lex_backtick(w, false)) return false;
      } else if (c == '*' || c == '?' || c == '[') {
        add(w, SegKind::kGlob, std::string(1, c), false);
        ++pos_;
      } else if (c == '~' && (pos_ == start || src_[pos_ - 1] == '=' || src_[pos_ - 1] == ':')) {
        std::size_t end = pos_ + 1;
        while (end < src_.size() &&
               (is_name_char(src_[end]) || src_[end] == '-' || src_[end] == '.'))
          ++end;
        if (end < src_.size() && !(src_[end] == '/' || src_[end] == ':' || is_blank(src_[end]) ||
                                   src_[end] == '\n' || is_op_char(src_[end]))) {
          add(w, SegKind::kLiteral, "~", false);  // "~x'y'" is not a tilde prefix
          ++pos_;
          continue;
        }
        add(w, SegKind::kTilde, std::string(src_.substr(pos_ + 1, end - pos_ - 1)), false);
        pos_ = end;
      } else if (c == '{' && is_brace_expansion()) {
        std::size_t end = src_.find('}', pos_);
        add(w, SegKind::kBrace, std::string(src_.substr(pos_, end - pos_ + 1)), false);
        pos_ = end + 1;
      } else {
        add(w, SegKind::kLiteral, std::string(1, c), false);
        ++pos_;
      }
    }
    w.raw = std::string(src_.substr(start, pos_ - start));
    if (!any) return true;
    // An all-digit unquoted word directly before < or > is an io number (2>file).
    if (pos_ < src_.size() && (src_[pos_] == '<' || src_[pos_] == '>') && w.raw.size() <= 4 &&
        std::all_of(w.raw.begin(), w.raw.end(), ::isdigit)) {
      Token t;
      t.kind = TokKind::kIoNumber;
      t.io_number = std::stoi(w.raw);
      out.push_back(std::move(t));
      return true;
    }
    Token t;
    t.kind = TokKind::kWord;
    t.word = std::move(w);
    out.push_back(std::move(t));
    return true;
  }

  // bash brace expansion: an unquoted "{...}" within one word holding "," or "..".
  bool is_brace_expansion() const {
    int depth = 0;
    bool sep = false;
    for (std::size_t i = pos_; i < src_.size(); ++i) {
      char c = src_[i];
      if (is_blank(c) || c == '\n' || c == ';' || c == '|' || c == '&' || c == '<' || c == '>')
        return false;
      if (c == '\'' || c == '"' || c == '\\' || c == '$' || c == '`') return false;
      if (c == '{') ++depth;
      if (c == '}' && --depth == 0) return sep;
      if (depth == 1 && (c == ',' || (c == '.' && i + 1 < src_.size() && src_[i + 1] == '.')))
        sep = true;
    }
    return false;
  }

  // Inside "...": \ escapes only $ ` " \ and newline. With terminator 0 (a here-doc body)
  // the text runs to the end and '"' is ordinary.
  bool lex_dquote(Word& w, char terminator) {
    while (pos_ < src_.size()) {
      char c = src_[pos_];
      if (terminator != 0 && c == terminator) {
        ++pos_;
        if (w.segs.empty() || w.segs.back().kind != SegKind::kLiteral || !w.segs.back().quoted)
          add(w, SegKind::kLiteral, "", true);
        return true;
      }
      if (c == '\\' && pos_ + 1 < src_.size()) {
        char n = src_[pos_ + 1];
        if (n == '\n') {
          pos_ += 2;
        } else if (n == '$' || n == '`' || n == '\\' || (n == '"' && terminator != 0)) {
          add(w, SegKind::kLiteral, std::string(1, n), true);
          pos_ += 2;
        } else {
          add(w, SegKind::kLiteral, "\\", true);
          ++pos_;
        }
      } else if (c == '$') {
        if (!lex_dollar(w, true)) return false;
      } else if (c == '`') {
        if (!lex_backtick(w, true)) return false;
      } else {
        add(w, SegKind::kLiteral, std::string(1, c), true);
        ++pos_;
      }
    }
    if (terminator != 0) return error("unterminated double quote");
    return true;
  }

  // Finds the end of a $(...)/<(...)/>(...) by lexing its inside, so quotes and nested
  // parentheses inside it are honoured. `skip` is the length of the opener.
  bool lex_paren_subst(Word& w, std::size_t skip, bool quoted) {
    if (++nesting_ > kMaxShellDepth) return error("substitutions nested too deeply");
    std::size_t inner_start = pos_ + skip;
    Lexer inner(src_, problems_);
    inner.pos_ = inner_start;
    inner.nesting_ = nesting_;
    std::vector<Token> ignored;
    if (!inner.lex(true, ignored)) return false;
    add(w, SegKind::kSubst, std::string(src_.substr(inner_start, inner.pos_ - inner_start)), quoted,
        src_[pos_]);
    pos_ = inner.pos_ + 1;
    --nesting_;
    return true;
  }

  bool lex_dollar(Word& w, bool quoted) {
    std::size_t n = pos_ + 1;
    char c = n < src_.size() ? src_[n] : '\0';
    if (c == '(' && n + 1 < src_.size() && src_[n + 1] == '(') return lex_arith(w, quoted);
    if (c == '(') return lex_paren_subst(w, 2, quoted);
    if (c == '{') return lex_braced_param(w, quoted);
    if (is_name_start(c)) {
      std::size_t end = n;
      while (end < src_.size() && is_name_char(src_[end])) ++end;
      add(w, SegKind::kVar, std::string(src_.substr(n, end - n)), quoted);
      pos_ = end;
      return true;
    }
    if (c != '\0' && (std::isdigit(static_cast<unsigned char>(c)) ||
                      std::string_view("@*#?-$!").find(c) != std::string_view::npos)) {
      add(w, SegKind::kVar, std::string(1, c), quoted);
      pos_ = n + 1;
      return true;
    }
    if (c == '\'' && !quoted) return lex_ansi_c(w);
    if (c == '"' && !quoted) {  // $"..." (locale translation) reads like "..."
      pos_ = n + 1;
      return lex_dquote(w, '"');
    }
    add(w, SegKind::kLiteral, "$", quoted);
    ++pos_;
    return true;
  }

  // Where the bracket after pos_ closes, nested pairs counted (with `escapes`, a backslash
  // hides the next character); npos when it never does.
  std::size_t closing(char open, char close, bool escapes) const {
    int depth = 0;
    for (std::size_t i = pos_ + 1; i < src_.size(); ++i) {
      if (escapes && src_[i] == '\\') {
        ++i;
        continue;
      }
      if (src_[i] == open) ++depth;
      if (src_[i] == close && --depth == 0) return i;
    }
    return std::string_view::npos;
  }

  bool lex_arith(Word& w, bool quoted) {
    const std::size_t end = closing('(', ')', false);
    if (end == std::string_view::npos) return error("unterminated $((");
    std::string inner(src_.substr(pos_ + 3, end > pos_ + 4 ? end - pos_ - 4 : 0));
    if (has_command_subst(inner)) problems_.push_back("command substitution inside $((...))");
    add(w, SegKind::kSubst, std::string(src_.substr(pos_, end + 1 - pos_)), quoted);
    pos_ = end + 1;
    return true;
  }

  bool lex_braced_param(Word& w, bool quoted) {
    const std::size_t end = closing('{', '}', true);
    if (end == std::string_view::npos) return error("unterminated ${");
    std::string_view inner = src_.substr(pos_ + 2, end - pos_ - 2);
    const bool special =
        inner.size() == 1 && std::string_view("@*#?-$!").find(inner[0]) != std::string_view::npos;
    bool plain =
        !inner.empty() && (std::all_of(inner.begin(), inner.end(), is_name_char) || special);
    if (plain) {
      add(w, SegKind::kVar, std::string(inner), quoted);
    } else {
      // ${x:-$(cmd)} runs cmd; we do not model parameter operators, so say so.
      if (has_command_subst(inner)) problems_.push_back("command substitution inside ${...}");
      add(w, SegKind::kSubst, std::string(src_.substr(pos_, end + 1 - pos_)), quoted);
    }
    pos_ = end + 1;
    return true;
  }

  bool lex_backtick(Word& w, bool quoted) {
    std::string inner;
    for (std::size_t i = pos_ + 1; i < src_.size(); ++i) {
      char c = src_[i];
      if (c == '\\' && i + 1 < src_.size() &&
          (src_[i + 1] == '`' || src_[i + 1] == '\\' || src_[i + 1] == '$')) {
        inner += src_[++i];
        continue;
      }
      if (c == '`') {
        add(w, SegKind::kSubst, std::move(inner), quoted, '`');
        pos_ = i + 1;
        return true;
      }
      inner += c;
    }
    return error("unterminated backquote");
  }

  // bash $'...': backslash escapes decoded, as the program will see them.
  bool lex_ansi_c(Word& w) {
    std::string value;
    std::size_t i = pos_ + 2;
    for (; i < src_.size() && src_[i] != '\''; ++i) {
      if (src_[i] != '\\' || i + 1 >= src_.size()) {
        value += src_[i];
        continue;
      }
      char e = src_[++i];
      static const std::string_view kFrom = "abefnrtv\\'\"?", kTo = "\a\b\x1b\f\n\r\t\v\\'\"?";
      if (auto k = kFrom.find(e); k != std::string_view::npos) {
        value += kTo[k];
      } else if (e == 'x' || (e >= '0' && e <= '7')) {
        int base = e == 'x' ? 16 : 8, max = e == 'x' ? 2 : 3, v = e == 'x' ? 0 : e - '0',
            got = e == 'x' ? 0 : 1;
        while (got < max && i + 1 < src_.size() &&
               std::isxdigit(static_cast<unsigned char>(src_[i + 1])) &&
               (base == 16 || (src_[i + 1] >= '0' && src_[i + 1] <= '7'))) {
          char d = src_[++i];
          v = v * base + (std::isdigit(static_cast<unsigned char>(d))
                              ? d - '0'
                              : (std::tolower(d) - 'a' + 10));
          ++got;
        }
        value += static_cast<char>(v);
      } else {
        value += '\\';
        value += e;
      }
    }
    if (i >= src_.size()) return error("unterminated $'");
    add(w, SegKind::kLiteral, std::move(value), true);
    pos_ = i + 1;
    return true;
  }

  // Reads the here-doc body after the current newline. A quoted delimiter makes the body
  // literal; otherwise it is expanded like "..." and its substitutions run.
  bool read_heredoc_body(Token& delim) {
    bool strip = strip_tabs_.empty() ? false : strip_tabs_.front();
    if (!strip_tabs_.empty()) strip_tabs_.erase(strip_tabs_.begin());
    const std::string tag = delim.word.literal();
    const bool quoted = delim.word.raw.find_first_of("'\"\\") != std::string::npos;
    std::string body;
    while (pos_ < src_.size()) {
      std::size_t eol = src_.find('\n', pos_);
      std::size_t end = eol == std::string_view::npos ? src_.size() : eol;
      std::string_view line = src_.substr(pos_, end - pos_);
      if (strip)
        while (!line.empty() && line.front() == '\t') line.remove_prefix(1);
      pos_ = eol == std::string_view::npos ? src_.size() : eol + 1;
      if (line == tag) break;
      body += std::string(line) + "\n";
    }
    Word w;
    w.raw = delim.heredoc_body.raw;
    if (quoted || body.find_first_of("$`") == std::string::npos) {
      add(w, SegKind::kLiteral, body, true);
    } else {
      Lexer inner(body, problems_);
      inner.nesting_ = nesting_;
      if (!inner.lex_dquote(w, 0)) return false;
    }
    delim.heredoc_body = std::move(w);
    return true;
  }

  std::string_view src_;
  std::size_t pos_ = 0;
  int nesting_ = 0;
  std::vector<bool> strip_tabs_;
  std::vector<std::string>& problems_;
};

class Parser {
 public:
  Parser(const std::vector<Token>& toks, ShellParse& out, int depth, std::string origin)
      : t_(toks), out_(out), depth_(depth), origin_(std::move(origin)) {}

  void parse() {
    parse_list({});
    if (!at_end()) syntax("unexpected " + describe(cur()));
  }

 private:
  const Token& cur() const { return t_[i_ < t_.size() ? i_ : t_.size() - 1]; }
  bool at_end() const { return i_ >= t_.size() || t_[i_].kind == TokKind::kEnd; }
  bool is_op(const char* op) const {
    return !at_end() && cur().kind == TokKind::kOp && cur().op == op;
  }
  bool is_word(std::string_view w) const {
    return !at_end() && cur().kind == TokKind::kWord && cur().word.is_literal() &&
           cur().word.raw == w;
  }
  bool is_newline() const { return !at_end() && cur().kind == TokKind::kNewline; }
  void skip_newlines() {
    while (is_newline()) ++i_;
  }
  std::string describe(const Token& t) const {
    if (t.kind == TokKind::kOp) return "'" + t.op + "'";
    if (t.kind == TokKind::kWord) return "word '" + t.word.raw + "'";
    if (t.kind == TokKind::kNewline) return "newline";
    return "end of line";
  }
  void syntax(const std::string& what) {
    if (!failed_) out_.problems.push_back("syntax: " + what);
    failed_ = true;
    i_ = t_.size();  // stop: the rest cannot be trusted to mean what it seems
  }
  bool expect_word(const char* w) {
    skip_newlines();
    if (is_word(w)) {
      ++i_;
      return true;
    }
    syntax(std::string("expected '") + w + "', got " +
           (at_end() ? "end of line" : describe(cur())));
    return false;
  }

  bool at_terminator(const std::vector<const char*>& terms) const {
    if (at_end()) return true;
    if (cur().kind == TokKind::kOp &&
        (cur().op == ")" || cur().op == ";;" || cur().op == ";&" || cur().op == ";;&"))
      return true;
    for (const char* term : terms)
      if (is_word(term)) return true;
    return false;
  }

  void parse_list(const std::vector<const char*>& terms) {
    while (true) {
      skip_newlines();
      if (at_terminator(terms) || failed_) return;
      parse_and_or(terms);
      if (failed_) return;
      if (is_op(";") || is_op("&") || is_newline()) {
        ++i_;
        continue;
      }
      if (at_terminator(terms)) return;
      syntax("unexpected " + describe(cur()));
      return;
    }
  }

  // part (op newline* part)*: the shape of an and-or list and of a pipeline.
  using Part = void (Parser::*)(const std::vector<const char*>&);
  void parse_joined(Part part, const char* op1, const char* op2,
                    const std::vector<const char*>& terms) {
    (this->*part)(terms);
    while (!failed_ && (is_op(op1) || is_op(op2))) {
      ++i_;
      skip_newlines();
      (this->*part)(terms);
    }
  }

  void parse_and_or(const std::vector<const char*>& terms) {
    parse_joined(&Parser::parse_pipeline, "&&", "||", terms);
  }

  void parse_pipeline(const std::vector<const char*>& terms) {
    if (is_word("!")) ++i_;
    parse_joined(&Parser::parse_command, "|", "|&", terms);
  }

  void parse_command(const std::vector<const char*>& terms) {
    if (at_end()) return syntax("missing command");
    if (is_op("(")) {
      ++i_;
      parse_list({});
      if (!is_op(")")) return syntax("expected ')'");
      ++i_;
      return parse_trailing_redirects();
    }
    if (is_word("{")) {
      ++i_;
      parse_list({"}"});
      if (expect_word("}")) parse_trailing_redirects();
      return;
    }
    if (is_word("if")) return parse_if();
    if (is_word("while") || is_word("until")) {
      ++i_;
      parse_list({"do"});
      if (expect_word("do")) parse_list({"done"});
      if (!failed_ && expect_word("done")) parse_trailing_redirects();
      return;
    }
    if (is_word("for") || is_word("select")) return parse_for();
    if (is_word("case")) return parse_case();
    if (is_word("function")) {
      out_.problems.push_back("function definition");
      ++i_;
      if (!at_end() && cur().kind == TokKind::kWord) ++i_;
      if (is_op("(")) {
        ++i_;
        if (is_op(")")) ++i_;
      }
      skip_newlines();
      return parse_command(terms);
    }
    for (const char* reserved : {"then", "else", "elif", "fi", "do", "done", "esac", "}"})
      if (is_word(reserved)) return syntax(std::string("unexpected '") + reserved + "'");
    parse_simple();
  }

  void parse_if() {
    ++i_;
    parse_list({"then"});
    if (!expect_word("then")) return;
    parse_list({"elif", "else", "fi"});
    while (!failed_ && is_word("elif")) {
      ++i_;
      parse_list({"then"});
      if (!expect_word("then")) return;
      parse_list({"elif", "else", "fi"});
    }
    if (!failed_ && is_word("else")) {
      ++i_;
      parse_list({"fi"});
    }
    if (!failed_ && expect_word("fi")) parse_trailing_redirects();
  }

  // The loop variable is set to each word in turn: an assignment-only command records it
  // (`for PATH in ./bin; do ls; done` changes what ls runs).
  void parse_for() {
    ++i_;
    if (at_end() || cur().kind != TokKind::kWord) return syntax("expected a loop variable");
    SimpleCommand loop;
    loop.depth = depth_;
    loop.origin = origin_;
    const std::string name = t_[i_++].word.raw;
    skip_newlines();
    if (is_word("in")) {
      ++i_;
      while (!at_end() && cur().kind == TokKind::kWord) {
        visit_word(cur().word);
        loop.assignments.emplace_back(name, t_[i_++].word);
      }
    } else {
      Word all;  // for NAME; do: the positional parameters
      all.segs.push_back({SegKind::kVar, "@", true, 0});
      all.raw = "\"$@\"";
      loop.assignments.emplace_back(name, std::move(all));
    }
    if (!loop.assignments.empty()) out_.commands.push_back(std::move(loop));
    if (is_op(";")) ++i_;
    if (!expect_word("do")) return;
    parse_list({"done"});
    if (!failed_ && expect_word("done")) parse_trailing_redirects();
  }

  void parse_case() {
    ++i_;
    if (at_end() || cur().kind != TokKind::kWord) return syntax("expected a word after case");
    visit_word(t_[i_++].word);
    if (!expect_word("in")) return;
    while (!failed_) {
      skip_newlines();
      if (is_word("esac")) break;
      if (is_op("(")) ++i_;
      while (!at_end() && cur().kind == TokKind::kWord) {  // patterns: a|b)
        visit_word(t_[i_++].word);
        if (is_op("|")) ++i_;
      }
      if (!is_op(")")) return syntax("expected ')' after a case pattern");
      ++i_;
      parse_list({"esac"});
      if (is_op(";;") || is_op(";&") || is_op(";;&")) ++i_;
    }
    if (!failed_ && expect_word("esac")) parse_trailing_redirects();
  }

  bool at_redirect() const {
    if (at_end()) return false;
    if (cur().kind == TokKind::kIoNumber) return true;
    if (cur().kind != TokKind::kOp) return false;
    static const char* const kRedirs[] = {"<",  ">",  ">>",  "<>", ">|",  "<&",
                                          ">&", "&>", "&>>", "<<", "<<-", "<<<"};
    for (const char* r : kRedirs)
      if (cur().op == r) return true;
    return false;
  }

  bool parse_redirect(SimpleCommand& cmd) {
    Redirect r;
    if (cur().kind == TokKind::kIoNumber) {
      r.fd = cur().io_number;
      ++i_;
      if (!at_redirect() || cur().kind != TokKind::kOp) {
        syntax("expected a redirection after an io number");
        return false;
      }
    }
    r.op = cur().op;
    ++i_;
    if (at_end() || cur().kind != TokKind::kWord) {
      syntax("redirection '" + r.op + "' without a target");
      return false;
    }
    const Token& target = t_[i_++];
    if (r.op == "<<" || r.op == "<<-") {
      r.target = target.word;
      visit_word(target.heredoc_body, "here-doc");
    } else {
      r.target = target.word;
      visit_word(r.target);
    }
    cmd.redirects.push_back(std::move(r));
    return true;
  }

  // Redirections after a compound command apply to all of it; we judge their targets.
  void parse_trailing_redirects() {
    SimpleCommand cmd;
    cmd.depth = depth_;
    cmd.origin = origin_;
    while (at_redirect())
      if (!parse_redirect(cmd)) return;
    if (!cmd.redirects.empty()) out_.commands.push_back(std::move(cmd));
  }

  static bool assignment_name(const Word& w, std::string& name) {
    if (w.segs.empty() || w.segs[0].kind != SegKind::kLiteral || w.segs[0].quoted) return false;
    const std::string& s = w.segs[0].text;
    auto eq = s.find('=');
    if (eq == std::string::npos || eq == 0 || !is_name_start(s[0])) return false;
    for (std::size_t k = 1; k < eq; ++k)
      if (!is_name_char(s[k])) return false;
    name = s.substr(0, eq);
    return true;
  }

  static Word assignment_value(const Word& w, std::size_t name_len) {
    Word v = w;
    v.segs[0].text.erase(0, name_len + 1);
    if (v.segs[0].text.empty()) v.segs.erase(v.segs.begin());
    v.raw = w.raw.size() > name_len ? w.raw.substr(name_len + 1) : "";
    return v;
  }

  void parse_simple() {
    SimpleCommand cmd;
    cmd.depth = depth_;
    cmd.origin = origin_;
    while (!at_end() && !failed_) {
      if (at_redirect()) {
        if (!parse_redirect(cmd)) return;
        continue;
      }
      if (cur().kind != TokKind::kWord) break;
      const Word& w = cur().word;
      std::string name;
      if (cmd.words.empty() && assignment_name(w, name)) {
        Word value = assignment_value(w, name.size());
        visit_word(value);
        cmd.assignments.emplace_back(name, std::move(value));
      } else {
        visit_word(w);
        cmd.words.push_back(w);
      }
      ++i_;
      if (cmd.words.size() == 1 && is_op("(") && i_ + 1 < t_.size() &&
          t_[i_ + 1].kind == TokKind::kOp && t_[i_ + 1].op == ")") {
        out_.problems.push_back("function definition '" + cmd.words[0].raw + "'");
        i_ += 2;
        skip_newlines();
        return parse_command({});
      }
    }
    if (cmd.words.empty() && cmd.assignments.empty() && cmd.redirects.empty()) {
      if (!failed_) syntax("expected a command, got " + describe(cur()));
      return;
    }
    out_.commands.push_back(std::move(cmd));
  }

  // Every substitution inside a word is a script of its own, judged one level deeper.
  void visit_word(const Word& w, const char* origin = nullptr) {
    for (const auto& s : w.segs) {
      if (s.kind != SegKind::kSubst || s.opener == 0) continue;
      const char* how = origin            ? origin
                        : s.opener == '`' ? "``"
                        : s.opener == '<' ? "<()"
                        : s.opener == '>' ? ">()"
                                          : "$()";
      nested(s.text, how);
    }
  }

  void nested(std::string_view script, const char* origin) {
    if (depth_ + 1 > kMaxShellDepth) {
      out_.problems.push_back("nested too deeply");
      return;
    }
    ShellParse inner = parse_shell(script, depth_ + 1);
    for (auto& c : inner.commands) {
      if (c.origin.empty()) c.origin = origin;
      out_.commands.push_back(std::move(c));
    }
    for (auto& p : inner.problems) out_.problems.push_back(std::move(p));
  }

  const std::vector<Token>& t_;
  ShellParse& out_;
  int depth_;
  std::string origin_;
  std::size_t i_ = 0;
  bool failed_ = false;
};

// Control characters other than tab and newline change what a terminal or a person sees
// without changing what the shell runs (CR hides text; NUL truncates in C tools).
bool find_control_char(std::string_view s, std::string& what) {
  for (unsigned char c : s) {
    if ((c < 0x20 && c != '\t' && c != '\n') || c == 0x7f) {
      char buf[48];
      std::snprintf(buf, sizeof buf, "control character 0x%02x", c);
      what = buf;
      return true;
    }
  }
  return false;
}

}  // namespace

ShellParse parse_shell(std::string_view script, int depth) {
  ShellParse out;
  if (script.size() > kMaxShellBytes) {
    out.problems.push_back("line longer than " + std::to_string(kMaxShellBytes) + " bytes");
    return out;
  }
  std::string what;
  if (find_control_char(script, what)) out.problems.push_back(what);
  std::vector<Token> toks;
  Lexer lexer(script, out.problems);
  lexer.lex(false, toks);  // on error, problems says so
  std::size_t words = static_cast<std::size_t>(std::count_if(
      toks.begin(), toks.end(), [](const Token& t) { return t.kind == TokKind::kWord; }));
  if (words > kMaxShellWords) {
    out.problems.push_back("more than " + std::to_string(kMaxShellWords) + " words");
    return out;
  }
  // Even after a lexing error, the tokens before it are parsed: their denies still count.
  Parser parser(toks, out, depth, "");
  parser.parse();
  return out;
}

}  // namespace moat::policy
