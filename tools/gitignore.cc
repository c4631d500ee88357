// tools/gitignore.cc: parsing and evaluation of .gitignore lines.
#include "tools/gitignore.h"

#include <fcntl.h>
#include <unistd.h>

#include "tools/glob.h"
#include "tools/resolve.h"

namespace moat::tools {
namespace {

std::string read_small_file(const std::string& path) {
  auto fd = open_canonical(path, O_RDONLY | O_NONBLOCK | O_NOCTTY);
  if (!fd) return "";
  std::string out;
  char buf[8192];
  ssize_t n;
  while ((n = ::read(fd->get(), buf, sizeof buf)) > 0 && out.size() < (1 << 20))
    out.append(buf, static_cast<std::size_t>(n));
  return out;
}

std::string parent_of(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  return slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
}

std::string relative_to(const std::string& dir, const std::string& path) {
  return dir == "/" ? path.substr(1) : path.substr(dir.size() + 1);
}

}  // namespace

const std::vector<GitIgnore::Rule>& GitIgnore::rules_of(const std::string& dir) {
  auto it = cache_.find(dir);
  if (it != cache_.end()) return it->second;
  std::vector<Rule> rules;
  const std::string text = read_small_file(dir == "/" ? "/.gitignore" : dir + "/.gitignore");
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t nl = text.find('\n', start);
    if (nl == std::string::npos) nl = text.size();
    std::string line = text.substr(start, nl - start);
    start = nl + 1;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    // Trailing spaces are ignored unless escaped with a backslash.
    while (!line.empty() && line.back() == ' ' &&
           !(line.size() >= 2 && line[line.size() - 2] == '\\'))
      line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    Rule r;
    if (line[0] == '!') {
      r.negate = true;
      line.erase(0, 1);
    } else if (line[0] == '\\' && line.size() > 1 && (line[1] == '#' || line[1] == '!')) {
      line.erase(0, 1);
    }
    if (!line.empty() && line.back() == '/') {
      r.dir_only = true;
      line.pop_back();
    }
    if (line.empty()) continue;
    r.pattern = line;
    rules.push_back(std::move(r));
  }
  return cache_.emplace(dir, std::move(rules)).first->second;
}

bool GitIgnore::is_ignored(const std::string& path, bool is_dir) {
  if (path == "/") return false;
  // Ancestors from the root down: a deeper file's lines come later and win.
  std::vector<std::string> dirs;
  for (std::string d = parent_of(path);; d = parent_of(d)) {
    dirs.push_back(d);
    if (d == "/") break;
  }
  bool ignored = false;
  for (auto it = dirs.rbegin(); it != dirs.rend(); ++it) {
    const std::string rel = relative_to(*it, path);
    for (const Rule& r : rules_of(*it)) {
      if (r.dir_only && !is_dir) continue;
      if (glob_match_relative(r.pattern, rel)) ignored = !r.negate;
    }
  }
  return ignored;
}

bool GitIgnore::is_excluded_below(const std::string& root, const std::string& path, bool is_dir) {
  if (path.size() <= root.size()) return false;
  const std::string parent = parent_of(path);
  if (parent.size() > root.size()) {
    auto it = dir_excluded_.find(parent);
    bool excluded;
    if (it != dir_excluded_.end()) {
      excluded = it->second;
    } else {
      excluded = is_excluded_below(root, parent, true);
      dir_excluded_[parent] = excluded;
    }
    if (excluded) return true;
  }
  return is_ignored(path, is_dir);
}

}  // namespace moat::tools
