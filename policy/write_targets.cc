// policy/write_targets.cc: which words of a command name paths it writes. The option specs
// (which options take a value, so operands are found correctly) come from the man pages of
// coreutils 9, GNU tar 1.34, unzip 6.0, GNU patch 2.7, GNU sed 4.9, rsync 3.2 and git 2.39.
#include "policy/write_targets.h"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <initializer_list>
#include <string_view>
#include <utility>

#include "policy/paths.h"

namespace moat::policy {
namespace {

constexpr auto npos = std::string::npos;

struct OptionSpec {
  std::string_view value_short;              // take the rest of the cluster or the next word
  std::vector<std::string_view> value_long;  // take the next word when written without '='
  std::string_view optional_short = "";      // take only an attached value (sed -i[SUFFIX])
};

// A command's words split by its option spec.
struct Parsed {
  std::vector<std::pair<std::string, Arg>> values;  // "-C"/"--directory" and its value
  std::vector<std::string> options;                 // every option given
  std::vector<Arg> operands;

  bool has(std::initializer_list<std::string_view> names) const {
    return std::any_of(options.begin(), options.end(), [&](const std::string& o) {
      return std::find(names.begin(), names.end(), o) != names.end();
    });
  }
  std::vector<Arg> values_of(std::initializer_list<std::string_view> names) const {
    std::vector<Arg> out;
    for (const auto& [name, value] : values)
      if (std::find(names.begin(), names.end(), name) != names.end()) out.push_back(value);
    return out;
  }
};

Arg literal(std::string text) {
  Arg a;
  a.prefix = text;
  a.text = std::move(text);
  return a;
}

// The rest of word `a` from byte `n`: an attached value (-Cdir, --directory=dir).
Arg tail_of(const Arg& a, std::size_t n) {
  Arg out = a;
  out.glob.clear();
  out.home = false;
  out.text = a.text.size() > n ? a.text.substr(n) : "";
  out.prefix = a.known ? out.text : a.prefix.size() > n ? a.prefix.substr(n) : "";
  return out;
}

// `name` inside directory `dir`; an unknown directory stays unknown (judged below its prefix).
Arg joined(const Arg& dir, std::string_view name) {
  if (!dir.known && !dir.home) return dir;
  Arg out = dir;
  out.glob.clear();
  out.known = true;
  out.may_split = false;
  if (out.text.empty() || out.text.back() != '/') out.text += '/';
  out.text += name;
  out.prefix = out.text;
  return out;
}

// `a` as seen from inside `base` (git -C base, patch -d base): relative paths move.
Arg inside(const Arg* base, const Arg& a) {
  if (base == nullptr || (a.known && !a.text.empty() && a.text[0] == '/') || a.home) return a;
  if (a.known) return joined(*base, a.text);
  if (!a.prefix.empty() && a.prefix[0] == '/') return a;
  Arg out = a;  // still unknown: judged below the directory its known prefix names
  out.glob.clear();
  out.prefix = base->known ? joined(*base, a.prefix).text : base->prefix;
  return out;
}

Parsed parse(const std::vector<Arg>& argv, std::size_t start, const OptionSpec& spec,
             bool old_style = false) {
  Parsed p;
  bool operands_only = false;
  for (std::size_t i = start; i < argv.size(); ++i) {
    const Arg& a = argv[i];
    if (old_style && i == start && a.known && !a.text.empty() && a.text[0] != '-') {
      // tar's old style: "xzf a.tar" is -x -z -f a.tar; each value letter takes the next word.
      std::size_t next = i + 1;
      for (char c : a.text) {
        p.options.push_back(std::string("-") + c);
        if (spec.value_short.find(c) != npos && next < argv.size())
          p.values.emplace_back(std::string("-") + c, argv[next++]);
      }
      i = next - 1;
      continue;
    }
    if (operands_only || !a.known || a.text.size() < 2 || a.text[0] != '-') {
      p.operands.push_back(a);
      continue;
    }
    if (a.text == "--") {
      operands_only = true;
      continue;
    }
    if (a.text[1] == '-') {
      const auto eq = a.text.find('=');
      std::string name = a.text.substr(0, eq);
      if (eq != npos) p.values.emplace_back(name, tail_of(a, eq + 1));
      else if (std::find(spec.value_long.begin(), spec.value_long.end(), name) !=
                   spec.value_long.end() &&
               i + 1 < argv.size())
        p.values.emplace_back(name, argv[++i]);
      p.options.push_back(std::move(name));
      continue;
    }
    for (std::size_t k = 1; k < a.text.size(); ++k) {
      const char c = a.text[k];
      const std::string name = std::string("-") + c;
      p.options.push_back(name);
      const bool optional = spec.optional_short.find(c) != npos;
      if (!optional && spec.value_short.find(c) == npos) continue;
      if (k + 1 < a.text.size()) p.values.emplace_back(name, tail_of(a, k + 1));
      else if (!optional && i + 1 < argv.size()) p.values.emplace_back(name, argv[++i]);
      break;
    }
  }
  return p;
}

class Collector {
 public:
  Collector(const CommandUnit& u, std::vector<OperandWrite>& out) : u_(u), out_(out) {}
  void add(const Arg& path, bool below, const std::string& via) {
    out_.push_back({path, below, via});
  }
  // A known destination names a directory: "dir/", ".", or an existing directory.
  bool names_directory(const Arg& a) const {
    if (a.home) return a.text.empty() || a.text.back() == '/';
    if (!a.known || a.text.empty()) return false;
    if (a.text.back() == '/' || a.text == "." || a.text == "..") return true;
    const std::string& cwd = u_.cwds.empty() ? std::string() : u_.cwds[0];
    if (cwd.empty() && a.text[0] != '/') return false;
    struct stat st;
    return ::stat(lexical_absolute(a.text, cwd).c_str(), &st) == 0 && S_ISDIR(st.st_mode);
  }
  const CommandUnit& unit() const { return u_; }

 private:
  const CommandUnit& u_;
  std::vector<OperandWrite>& out_;
};

// cp, mv, ln, install: the destination, and into a directory each source's name there.
void copy_writes(const std::string& prog, Collector& c) {
  const OptionSpec spec{
      prog == "install" ? "gmoSt" : "St",
      {"--suffix", "--target-directory", "--group", "--mode", "--owner", "--strip-program"}};
  const Parsed p = parse(c.unit().argv, 1, spec);
  const std::string via = "operand of " + prog;
  if (prog == "install" && p.has({"-d", "--directory"})) {
    for (const auto& a : p.operands) c.add(a, false, via);
    return;
  }
  std::vector<Arg> sources = p.operands;
  std::vector<Arg> dirs = p.values_of({"-t", "--target-directory"});
  bool into_dir = !dirs.empty();
  if (dirs.empty() && prog == "ln" && sources.size() == 1) {  // ln -s TARGET: the link is ./NAME
    dirs.push_back(literal("."));
    into_dir = true;
  } else if (dirs.empty() && !sources.empty()) {
    dirs.push_back(sources.back());
    sources.pop_back();
    into_dir = !p.has({"-T", "--no-target-directory"}) &&
               (sources.size() > 1 || c.names_directory(dirs[0]));
  }
  for (const auto& d : dirs) {
    c.add(d, false, via);  // the destination itself: a file, or the directory's entry
    if (!into_dir) continue;
    for (const auto& s : sources) {
      if (s.known && !s.home) c.add(joined(d, base_name(s.text)), false, via);
      else c.add(d, true, via);  // an unknown source lands somewhere in the directory
    }
  }
  if (prog == "mv")
    for (const auto& s : sources) c.add(s, false, via);  // mv removes its sources
}

void sort_writes(Collector& c) {
  const OptionSpec spec{"kotST",
                        {"--key", "--output", "--field-separator", "--buffer-size",
                         "--temporary-directory", "--compress-program", "--files0-from",
                         "--parallel", "--batch-size", "--sort", "--random-source"}};
  for (const auto& o : parse(c.unit().argv, 1, spec).values_of({"-o", "--output"}))
    c.add(o, false, "sort -o");
}

// tar -c/-r/-u writes the archive; tar -x writes below -C (or the cwd), anywhere with -P.
void tar_writes(Collector& c) {
  const OptionSpec spec{"bCfFgHIKLNTVX",
                        {"--directory",
                         "--file",
                         "--listed-incremental",
                         "--to-command",
                         "--use-compress-program",
                         "--exclude-from",
                         "--files-from",
                         "--newer",
                         "--label",
                         "--format",
                         "--blocking-factor",
                         "--info-script",
                         "--new-volume-script",
                         "--tape-length",
                         "--starting-file",
                         "--owner",
                         "--group",
                         "--mode",
                         "--mtime",
                         "--transform",
                         "--xform",
                         "--exclude",
                         "--checkpoint-action",
                         "--index-file",
                         "--volno-file",
                         "--rsh-command"}};
  const Parsed p = parse(c.unit().argv, 1, spec, true);
  if (p.has({"-c", "--create", "-r", "--append", "-u", "--update", "-A", "--catenate",
             "--concatenate", "--delete"}))
    for (const auto& f : p.values_of({"-f", "--file"}))
      if (!(f.known && f.text == "-")) c.add(f, false, "tar archive");
  for (const auto& f : p.values_of({"-g", "--listed-incremental", "--index-file", "--volno-file"}))
    c.add(f, false, "tar state file");
  if (!p.has({"-x", "--extract", "--get"}) || p.has({"-O", "--to-stdout"})) return;
  std::vector<Arg> dirs = p.values_of({"-C", "--directory"});
  if (dirs.empty()) dirs.push_back(literal("."));
  for (const auto& d : dirs) c.add(d, true, "tar -x into");
  if (p.has({"-P", "--absolute-names"}))
    c.add(literal("/"), true, "tar -x -P (absolute member names)");
}

void unzip_writes(Collector& c) {
  const Parsed p = parse(c.unit().argv, 1, OptionSpec{"dP", {}});
  if (p.has({"-l", "-t", "-v", "-p", "-Z", "-z"})) return;  // list, test, pipe: nothing written
  std::vector<Arg> dirs = p.values_of({"-d"});
  if (dirs.empty()) dirs.push_back(literal("."));
  for (const auto& d : dirs) c.add(d, true, "unzip into");
}

// patch [ORIGFILE [PATCHFILE]]: the original (or -o FILE); without one, the files the diff
// names, below -d DIR or the cwd.
void patch_writes(Collector& c) {
  const OptionSpec spec{"BDFgiopVYzdr",
                        {"--prefix", "--ifdef", "--fuzz", "--get", "--input", "--output", "--strip",
                         "--version-control", "--basename-prefix", "--suffix", "--directory",
                         "--reject-file", "--quoting-style", "--reject-format"}};
  const Parsed p = parse(c.unit().argv, 1, spec);
  if (p.has({"--dry-run"})) return;
  const std::vector<Arg> dirs = p.values_of({"-d", "--directory"});
  const Arg* base = dirs.empty() ? nullptr : &dirs.back();  // patch changes there first
  const std::vector<Arg> outs = p.values_of({"-o", "--output"});
  for (const auto& o : outs)
    if (!(o.known && o.text == "-")) c.add(inside(base, o), false, "patch -o");
  for (const auto& r : p.values_of({"-r", "--reject-file"}))
    c.add(inside(base, r), false, "patch -r");
  if (!outs.empty()) return;
  if (!p.operands.empty()) c.add(inside(base, p.operands.front()), false, "patch target");
  else c.add(base != nullptr ? *base : literal("."), true, "files the patch names");
}

std::string_view trim_left(std::string_view v) {
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  return v;
}

// A GNU sed script: the commands that write files (w, W, and the s command's w flag; the
// file name runs to the end of the line) or run the shell (e, and the s command's e flag).
// False when the script is not understood (then nothing about it is assumed).
class SedScript {
 public:
  explicit SedScript(std::string_view s) : s_(s) {}
  bool scan(std::vector<std::string>& files, bool& runs) {
    while (i_ < s_.size()) {
      const char c = s_[i_];
      if (c == ' ' || c == '\t' || c == '\n' || c == ';') {
        ++i_;
        continue;
      }
      if (!skip_address() || i_ >= s_.size() || !command(s_[i_++], files, runs)) return false;
    }
    return true;
  }

 private:
  bool skip_address() {
    while (i_ < s_.size()) {
      const char c = s_[i_];
      if (std::isdigit(static_cast<unsigned char>(c)) || c == '$' || c == ',' || c == '~' ||
          c == '+' || c == '!' || c == ' ' || c == '\t' || c == 'I' || c == 'M') {
        ++i_;
      } else if (c == '/') {
        ++i_;
        if (!skip_delimited('/')) return false;
      } else if (c == '\\') {
        if (i_ + 1 >= s_.size()) return false;
        const char d = s_[i_ + 1];
        i_ += 2;
        if (!skip_delimited(d)) return false;
      } else {
        return true;
      }
    }
    return true;
  }
  // From after an opening delimiter to after the closing one; "\x" escapes.
  bool skip_delimited(char d) {
    while (i_ < s_.size()) {
      if (s_[i_] == '\\') {
        i_ += 2;
        continue;
      }
      if (s_[i_++] == d) return true;
    }
    return false;
  }
  std::size_t end_of_line() const {
    const auto e = s_.find('\n', i_);
    return e == npos ? s_.size() : e;
  }
  void skip_label() {
    while (i_ < s_.size() && s_[i_] != ';' && s_[i_] != '\n') ++i_;
  }
  bool file_name(std::vector<std::string>& files) {
    const std::size_t e = end_of_line();
    const std::string_view name = trim_left(s_.substr(i_, e - i_));
    i_ = e;
    if (name.empty()) return false;
    files.emplace_back(name);
    return true;
  }
  bool command(char c, std::vector<std::string>& files, bool& runs) {
    switch (c) {
      case '{':
      case '}':
      case '=':
      case 'd':
      case 'D':
      case 'g':
      case 'G':
      case 'h':
      case 'H':
      case 'n':
      case 'N':
      case 'p':
      case 'P':
      case 'x':
      case 'z':
      case 'F': return true;
      case 'l':
      case 'L':
      case 'q':
      case 'Q':
        while (i_ < s_.size() &&
               (s_[i_] == ' ' || std::isdigit(static_cast<unsigned char>(s_[i_]))))
          ++i_;
        return true;
      case ':':
      case 'b':
      case 't':
      case 'T':
      case 'v': skip_label(); return true;
      case '#':
      case 'r':
      case 'R':  // a comment; r and R only read
        i_ = end_of_line();
        return true;
      case 'a':
      case 'i':
      case 'c':  // text to the end of the line; "\" + newline goes on
        while (i_ < s_.size() && s_[i_] != '\n') i_ += s_[i_] == '\\' ? 2 : 1;
        return true;
      case 'w':
      case 'W': return file_name(files);
      case 'e':
        runs = true;
        i_ = end_of_line();
        return true;
      case 'y': return i_ < s_.size() && skip_pair(s_[i_++]);
      case 's': return i_ < s_.size() && skip_pair(s_[i_++]) && s_flags(files, runs);
      default: return false;
    }
  }
  bool skip_pair(char d) {
    return d != '\n' && d != '\\' && skip_delimited(d) && skip_delimited(d);
  }
  bool s_flags(std::vector<std::string>& files, bool& runs) {
    while (i_ < s_.size()) {
      const char f = s_[i_];
      if (f == 'w') {
        ++i_;
        return file_name(files);
      }
      if (f == 'e') runs = true;
      if (f != 'e' && f != 'g' && f != 'p' && f != 'i' && f != 'I' && f != 'm' && f != 'M' &&
          !std::isdigit(static_cast<unsigned char>(f)))
        return true;
      ++i_;
    }
    return true;
  }

  std::string_view s_;
  std::size_t i_ = 0;
};

void sed_writes(Collector& c, std::vector<std::string>& problems) {
  const Parsed p =
      parse(c.unit().argv, 1, OptionSpec{"efl", {"--expression", "--file", "--line-length"}, "i"});
  std::vector<Arg> scripts = p.values_of({"-e", "--expression"});
  std::vector<Arg> files = p.operands;
  if (p.has({"-f", "--file"}))
    problems.push_back("sed -f: the script is in a file, so its w and e commands cannot be seen");
  else if (scripts.empty() && !files.empty()) {
    scripts.push_back(files.front());
    files.erase(files.begin());
  }
  for (const auto& s : scripts) {
    if (!s.known) {
      problems.push_back(
          "sed: the script is an expansion; it could write files (w) or run commands (e)");
      continue;
    }
    std::vector<std::string> written;
    bool runs = false;
    if (!SedScript(s.text).scan(written, runs))
      problems.push_back("sed: the script could not be read: " + s.text);
    if (runs) problems.push_back("sed: the script runs shell commands (e)");
    for (auto& w : written) c.add(literal(std::move(w)), false, "sed w");
  }
  if (p.has({"-i", "--in-place"}))
    for (const auto& f : files) c.add(f, false, "sed -i");
}

bool is_remote_rsync(const Arg& a) {
  if (!a.known) return false;
  if (a.text.rfind("rsync://", 0) == 0) return true;
  const auto colon = a.text.find(':');
  return colon != npos && colon < a.text.find('/');
}

void rsync_writes(Collector& c) {
  const OptionSpec spec{"efBMT",
                        {"--rsh",
                         "--rsync-path",
                         "--filter",
                         "--exclude",
                         "--include",
                         "--exclude-from",
                         "--include-from",
                         "--files-from",
                         "--temp-dir",
                         "--partial-dir",
                         "--compare-dest",
                         "--copy-dest",
                         "--link-dest",
                         "--backup-dir",
                         "--suffix",
                         "--log-file",
                         "--log-file-format",
                         "--password-file",
                         "--write-batch",
                         "--only-write-batch",
                         "--read-batch",
                         "--chmod",
                         "--chown",
                         "--usermap",
                         "--groupmap",
                         "--timeout",
                         "--contimeout",
                         "--port",
                         "--out-format",
                         "--max-size",
                         "--min-size",
                         "--max-delete",
                         "--bwlimit",
                         "--block-size",
                         "--remote-option",
                         "--info",
                         "--debug",
                         "--iconv",
                         "--checksum-choice",
                         "--compress-choice",
                         "--compress-level",
                         "--skip-compress",
                         "--modify-window",
                         "--address",
                         "--sockopts",
                         "--outbuf",
                         "--stop-after",
                         "--stop-at",
                         "--protocol"}};
  const Parsed p = parse(c.unit().argv, 1, spec);
  if (p.operands.size() >= 2 && !is_remote_rsync(p.operands.back()))
    c.add(p.operands.back(), true, "rsync into");
  for (const auto& f : p.values_of({"--log-file", "--write-batch", "--only-write-batch"}))
    c.add(f, false, "rsync file");
  if (p.has({"--remove-source-files"}))
    for (std::size_t i = 0; i + 1 < p.operands.size(); ++i)
      if (!is_remote_rsync(p.operands[i]))
        c.add(p.operands[i], false, "rsync --remove-source-files");
}

// What `git clone URL` names its directory: the URL's last part without ".git".
Arg clone_dir(const Arg& url) {
  if (!url.known) return Arg{url.text, false, false, "", false, "", {}};
  std::string s = url.text;
  while (!s.empty() && s.back() == '/') s.pop_back();
  if (s.size() > 5 && s.compare(s.size() - 5, 5, "/.git") == 0) s.resize(s.size() - 5);
  if (s.size() > 4 && s.compare(s.size() - 4, 4, ".git") == 0) s.resize(s.size() - 4);
  const auto cut = s.find_last_of("/:");
  return literal(cut == npos ? s : s.substr(cut + 1));
}

// git -C DIR, --git-dir, --work-tree: a subcommand that writes writes there; clone and init
// create their directory; --output and format-patch -o write files.
void git_writes(Collector& c) {
  const auto& argv = c.unit().argv;
  std::vector<Arg> dirs;
  std::size_t i = 1;
  for (; i < argv.size() && argv[i].known && argv[i].text.size() > 1 && argv[i].text[0] == '-';
       ++i) {
    const std::string& t = argv[i].text;
    const bool takes = t == "-C" || t == "--git-dir" || t == "--work-tree";
    if (takes && i + 1 < argv.size())
      dirs.push_back(t == "-C" && !dirs.empty() ? inside(&dirs.back(), argv[i + 1]) : argv[i + 1]);
    else if (t.rfind("--git-dir=", 0) == 0 || t.rfind("--work-tree=", 0) == 0)
      dirs.push_back(tail_of(argv[i], t.find('=') + 1));
    if (takes || t == "-c" || t == "--namespace" || t == "--config-env" || t == "--super-prefix")
      ++i;
  }
  if (i >= argv.size() || !argv[i].known) return;
  const std::string& sub = argv[i].text;
  static const std::string_view kWriting[] = {
      "add",    "am",           "apply",   "checkout", "cherry-pick", "clean",     "clone",
      "commit", "merge",        "mv",      "pull",     "rebase",      "reset",     "restore",
      "revert", "rm",           "stash",   "switch",   "worktree",    "fetch",     "gc",
      "prune",  "config",       "tag",     "branch",   "notes",       "submodule", "bisect",
      "init",   "format-patch", "archive", "bundle"};
  if (std::find(std::begin(kWriting), std::end(kWriting), sub) != std::end(kWriting))
    for (const auto& d : dirs) c.add(d, false, "git -C");
  const Arg* base = dirs.empty() ? nullptr : &dirs.back();
  const Parsed p =
      parse(argv, i + 1,
            OptionSpec{"obucj",
                       {"--origin", "--branch", "--upload-pack", "--template", "--reference",
                        "--separate-git-dir", "--depth", "--config", "--jobs", "--filter",
                        "--output", "--output-directory", "--shallow-since", "--shallow-exclude",
                        "--server-option", "--bundle-uri"}});
  if (sub == "clone" && !p.operands.empty())
    c.add(inside(base, p.operands.size() > 1 ? p.operands[1] : clone_dir(p.operands[0])), false,
          "git clone into");
  if (sub == "init")
    c.add(inside(base, p.operands.empty() ? literal(".") : p.operands[0]), false, "git init");
  if (sub == "bundle" && p.operands.size() > 1 && p.operands[0].known &&
      p.operands[0].text == "create")
    c.add(inside(base, p.operands[1]), false, "git bundle create");
  const bool o_is_output = sub == "archive" || sub == "format-patch";
  for (const auto& o : p.values_of({"--output"})) c.add(inside(base, o), false, "git --output");
  if (o_is_output)
    for (const auto& o : p.values_of({"-o", "--output-directory"}))
      c.add(inside(base, o), sub == "format-patch", "git -o");
}

// Programs whose writes their own options name, each read by its own parser.
constexpr std::pair<std::string_view, void (*)(Collector&)> kOwnOptionParsers[] = {
    {"sort", sort_writes},   {"tar", tar_writes},     {"unzip", unzip_writes},
    {"patch", patch_writes}, {"rsync", rsync_writes}, {"git", git_writes}};

}  // namespace

std::vector<OperandWrite> operand_writes(const CommandUnit& u, std::vector<std::string>& problems) {
  std::vector<OperandWrite> out;
  if (u.argv.empty() || !u.argv[0].known) return out;
  const std::string prog(base_name(u.argv[0].text));
  const std::string via = "operand of " + prog;
  Collector c(u, out);
  auto all_operands_from = [&](std::size_t first) {
    for (std::size_t k = first; k < u.operands.size(); ++k)
      c.add(u.argv[u.operands[k]], false, via);
  };
  if (prog == "tee" || prog == "rm" || prog == "rmdir" || prog == "touch" || prog == "mkdir" ||
      prog == "truncate" || prog == "shred" || prog == "unlink") {
    all_operands_from(0);
  } else if (prog == "cp" || prog == "mv" || prog == "ln" || prog == "install") {
    copy_writes(prog, c);
  } else if (prog == "chmod" || prog == "chown" || prog == "chgrp") {
    all_operands_from(1);
  } else if (prog == "perl") {
    const bool in_place =
        std::any_of(u.flags.begin(), u.flags.end(), [](const std::string& f) { return f == "-i"; });
    const bool script_in_flags =
        std::any_of(u.flags.begin(), u.flags.end(),
                    [](const std::string& f) { return f == "-e" || f == "-E"; });
    if (in_place) all_operands_from(script_in_flags ? 0 : 1);
  } else if (prog == "sed") {
    sed_writes(c, problems);
  } else if (prog == "dd") {
    for (std::size_t k : u.operands)
      if (u.argv[k].prefix.rfind("of=", 0) == 0) c.add(tail_of(u.argv[k], 3), false, "dd of=");
  } else {
    for (const auto& [name, writes] : kOwnOptionParsers)
      if (prog == name) writes(c);
  }
  return out;
}

}  // namespace moat::policy
