// tools/grep.cc: `grep`. Both back ends (ripgrep's --json stream, the built-in walk and
// std::regex) produce per-file hits; one formatter turns hits into the result, so the
// limits, notices and order are the same whichever ran.
#include "tools/grep.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <regex>
#include <set>

#include "base/base64.h"
#include "base/sys.h"
#include "tools/gitignore.h"
#include "tools/glob.h"
#include "tools/resolve.h"
#include "tools/schema.h"
#include "tools/truncate.h"
#include "tools/walk.h"

namespace moat::tools {
namespace {

// What one file contributed: every matching line and every line within `context` of one.
struct FileHits {
  std::string rel;
  std::map<std::size_t, std::string> lines;  // line number -> text (without newline)
  std::set<std::size_t> matches;
};

ToolResult format_hits(std::vector<FileHits> files, const nlohmann::json& args) {
  std::sort(files.begin(), files.end(),
            [](const FileHits& a, const FileHits& b) { return path_less(a.rel, b.rel); });
  const std::size_t limit = args.value("limit", kGrepDefaultLimit);
  const std::size_t context = args.value("context", std::size_t{0});
  std::size_t kept = 0, total = 0;
  bool lines_cut = false;
  std::string out;
  for (const FileHits& f : files) {
    total += f.matches.size();
    std::vector<std::size_t> mine;
    for (std::size_t m : f.matches)
      if (kept + mine.size() < limit) mine.push_back(m);
    kept += mine.size();
    if (mine.empty()) continue;
    const std::set<std::size_t> shown_matches(mine.begin(), mine.end());
    for (const auto& [n, text] : f.lines) {
      const bool is_match = shown_matches.count(n) > 0;
      const bool near = std::any_of(mine.begin(), mine.end(), [&, n = n](std::size_t m) {
        return (n > m ? n - m : m - n) <= context;
      });
      if (!is_match && !near) continue;
      const std::string cut = truncate_line(text, kGrepMaxLineLength);
      lines_cut |= cut.size() != text.size();
      const char sep = is_match ? ':' : '-';
      out += f.rel + sep + std::to_string(n) + sep + " " + sanitize_utf8(cut) + "\n";
    }
  }
  if (kept == 0) return ToolResult::text("No matches found");
  std::vector<std::string> notices;
  if (total > kept) notices.push_back(limit_reached(limit, "matches", ", or refine pattern"));
  Truncation t = truncate_head(out, kMaxLines, kMaxBytes);
  if (t.truncated) notices.push_back(format_size(kMaxBytes) + " limit reached");
  if (lines_cut)
    notices.push_back("Some lines truncated to " + std::to_string(kGrepMaxLineLength) +
                      " characters. Use read to see full lines");
  ToolResult r = ToolResult::text(append_notices(t.text, notices));
  r.details = {{"matches", total}, {"shown", kept}, {"truncated", !notices.empty()}};
  return r;
}

Result<std::string> read_file(const std::string& path) {
  MOAT_ASSIGN_OR_RETURN(UniqueFd fd, open_canonical(path, O_RDONLY | O_NONBLOCK | O_NOCTTY));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return fail(Error{EINVAL, "not a file"});
  return sys::read_to_end(fd.get());
}

std::string escape_regex(const std::string& s) {
  static const std::string kSpecial = R"(\^$.|?*+()[]{}/-)";
  std::string out;
  for (char c : s) {
    if (kSpecial.find(c) != std::string::npos) out += '\\';
    out += c;
  }
  return out;
}

void search_file(const std::regex& re, const std::string& path, const std::string& rel,
                 std::size_t context, std::vector<FileHits>* out) {
  auto content = read_file(path);
  // Binary files are skipped, as rg skips them when it walks a tree.
  if (!content || std::memchr(content->data(), '\0', content->size()) != nullptr) return;
  std::vector<std::string_view> lines;
  std::string_view all = *content;
  std::size_t start = 0;
  while (start < all.size()) {
    std::size_t nl = all.find('\n', start);
    if (nl == std::string_view::npos) nl = all.size();
    std::string_view line = all.substr(start, nl - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back(line);
    start = nl + 1;
  }
  FileHits hits;
  hits.rel = rel;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (!std::regex_search(lines[i].begin(), lines[i].end(), re)) continue;
    hits.matches.insert(i + 1);
    const std::size_t lo = i >= context ? i - context : 0;
    const std::size_t hi = std::min(lines.size() - 1, i + context);
    for (std::size_t k = lo; k <= hi; ++k) hits.lines.emplace(k + 1, std::string(lines[k]));
  }
  if (!hits.matches.empty()) out->push_back(std::move(hits));
}

std::string base_name(const std::string& path) { return path.substr(path.rfind('/') + 1); }

// One --json message of rg into the hits (begin/end/summary messages carry nothing we use).
void take_rg_message(const nlohmann::json& msg, const std::string& root, bool root_is_dir,
                     std::map<std::string, FileHits>* files) {
  const std::string type = msg.value("type", "");
  if (type != "match" && type != "context") return;
  const auto& data = msg["data"];
  auto text_of = [](const nlohmann::json& field) -> std::string {
    if (field.contains("text")) return field["text"].get<std::string>();
    // rg sends non-UTF-8 as base64 "bytes"; decoded, the formatter replaces the invalid
    // bytes exactly as it does for the built-in back end.
    return base64_decode(field.value("bytes", ""));
  };
  const std::string path = text_of(data["path"]);
  std::string line = text_of(data["lines"]);
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
  const std::size_t n = data.value("line_number", std::size_t{0});
  std::string rel =
      root_is_dir
          ? (path.size() > root.size() + 1 ? path.substr(root == "/" ? 1 : root.size() + 1) : path)
          : base_name(path);
  FileHits& f = (*files)[rel];
  f.rel = rel;
  f.lines[n] = line;
  if (type == "match") f.matches.insert(n);
}

// rg --json output, one message per line; stderr is interleaved, so a line that is not
// JSON is rg's own error text.
std::map<std::string, FileHits> parse_rg_stream(const std::string& out, const std::string& root,
                                                bool root_is_dir, std::string* errors) {
  std::map<std::string, FileHits> files;
  std::size_t start = 0;
  while (start < out.size()) {
    std::size_t nl = out.find('\n', start);
    if (nl == std::string::npos) nl = out.size();
    const std::string line = out.substr(start, nl - start);
    start = nl + 1;
    auto msg = nlohmann::json::parse(line, nullptr, false);
    if (msg.is_discarded() || !msg.is_object()) {
      *errors += line + "\n";
      continue;
    }
    take_rg_message(msg, root, root_is_dir, &files);
  }
  return files;
}

ToolSpec grep_spec(const ToolLimits&) {
  ToolSpec s;
  s.description =
      "Search file contents for a regex (or a literal string with literal=true). Includes "
      "dotfiles, leaves out what .gitignore ignores and binary files. Output lines are "
      "'path:line: text' for matches and 'path-line- text' for context lines, paths relative to "
      "the search directory, sorted. Returns at most " +
      std::to_string(kGrepDefaultLimit) + " matches by default (set limit for more) and at most " +
      format_size(kMaxBytes) + " of output; lines longer than " +
      std::to_string(kGrepMaxLineLength) + " characters are truncated.";
  s.parameters = object_schema(
      {{"pattern",
        property("string", "Regex (or literal string) to search for", {{"minLength", 1}})},
       {"path", property("string", "Directory or file to search (default: the workspace)")},
       {"glob", property("string", "Only search files matching this glob, e.g. '*.ts'")},
       {"ignoreCase", property("boolean", "Case-insensitive search")},
       {"literal", property("boolean", "Treat pattern as a literal string")},
       {"context",
        property("integer", "Lines of context before and after each match", {{"minimum", 0}})},
       {"limit", limit_property("matches", kGrepDefaultLimit)}},
      {"pattern"});
  return s;
}

ToolResult grep_in_sandbox(const std::string& canonical, const nlohmann::json& args) {
  const std::string pattern = args.at("pattern").get<std::string>();
  auto flags = std::regex::ECMAScript;
  if (args.value("ignoreCase", false)) flags |= std::regex::icase;
  std::regex re;
  try {
    re = std::regex(args.value("literal", false) ? escape_regex(pattern) : pattern, flags);
  } catch (const std::regex_error& e) {
    return ToolResult::error("invalid regex " + pattern + ": " + e.what() +
                             " (use literal=true to search for the text as written)");
  }
  const std::size_t context = args.value("context", std::size_t{0});
  const std::string glob = args.value("glob", "");
  std::vector<FileHits> hits;
  struct stat st {};
  auto fd = open_canonical(canonical, O_PATH);
  if (!fd || ::fstat(fd->get(), &st) != 0) return ToolResult::error("cannot search " + canonical);
  if (!S_ISDIR(st.st_mode)) {
    search_file(re, canonical, base_name(canonical), context, &hits);
  } else {
    GitIgnore ignore;
    for (const WalkEntry& e : walk_tree(canonical, ignore)) {
      if (e.type != EntryType::kFile) continue;
      if (!glob.empty() && !glob_match_relative(glob, e.rel)) continue;
      search_file(re, e.path, e.rel, context, &hits);
    }
  }
  return format_hits(std::move(hits), args);
}

// rg (its path inside the sandbox) through the runner; its --json stream is formatted here.
ToolResult grep_with_rg(const Target& target, const nlohmann::json& args, CallContext& ctx,
                        const InWorker&) {
  const std::string& rg = target.program;
  const std::string& canonical = target.canonical;
  const bool is_dir = target.is_dir;
  // Only .gitignore files count (not .ignore, .rgignore, global or git's exclude), with or
  // without a git repository: what the built-in walk does.
  std::vector<std::string> argv = {rg,
                                   "--json",
                                   "--hidden",
                                   "--no-require-git",
                                   "--no-ignore-dot",
                                   "--no-ignore-global",
                                   "--no-ignore-exclude",
                                   "--no-config",
                                   "--no-messages",
                                   "--glob",
                                   "!.git"};
  if (args.value("ignoreCase", false)) argv.push_back("--ignore-case");
  if (args.value("literal", false)) argv.push_back("--fixed-strings");
  if (args.value("context", 0) > 0)
    argv.insert(argv.end(), {"--context", std::to_string(args["context"].get<int>())});
  // No --glob for the caller's glob: rg lets a whitelist glob override .gitignore, the
  // built-in does not; the glob is applied to rg's results below instead.
  argv.insert(argv.end(), {"--regexp", args.at("pattern").get<std::string>(), "--", canonical});
  std::string out;
  bool overflow = false;
  std::atomic<bool> stop{false};
  auto status = ctx.runner->exec(
      argv, ctx.workspace, ctx.limits.default_timeout_s,
      [&](std::string_view chunk) {
        if (out.size() + chunk.size() > ctx.limits.output_ceiling) {
          overflow = stop = true;
          return;
        }
        out.append(chunk);
      },
      &stop);
  if (!status) return ToolResult::error("could not run rg: " + status.error().message());
  std::string errors;
  std::map<std::string, FileHits> files = parse_rg_stream(out, canonical, is_dir, &errors);
  if (status->exit_code == 2 && files.empty())
    return ToolResult::error("grep failed: " +
                             sanitize_utf8(errors.empty() ? "rg exited with 2" : errors));
  if (overflow)
    return ToolResult::error("grep produced more than " + format_size(ctx.limits.output_ceiling) +
                             "; refine the pattern");
  const std::string glob = args.value("glob", "");
  std::vector<FileHits> hits;
  for (auto& [_, f] : files)
    if (glob.empty() || !is_dir || glob_match_relative(glob, f.rel)) hits.push_back(std::move(f));
  return format_hits(std::move(hits), args);
}

}  // namespace

const Tool kGrepTool = {.name = "grep",
                        .spec = &grep_spec,
                        .file = search_op(&grep_in_sandbox, {"rg"}, &grep_with_rg),
                        .explores = true};

}  // namespace moat::tools
