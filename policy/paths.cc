// policy/paths.cc: lexical normalisation and realpath of the existing prefix.
#include "policy/paths.h"

#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <vector>

#include "base/workspace_path.h"

namespace moat::policy {

std::string lexical_absolute(std::string_view path, std::string_view cwd) {
  std::string joined;
  if (!path.empty() && path[0] == '/') {
    joined = std::string(path);
  } else {
    joined = std::string(cwd.empty() ? "/" : cwd) + "/" + std::string(path);
  }
  std::vector<std::string_view> parts;
  std::string_view s(joined);
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && s[i] == '/') ++i;
    std::size_t start = i;
    while (i < s.size() && s[i] != '/') ++i;
    std::string_view part = s.substr(start, i - start);
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      if (!parts.empty()) parts.pop_back();
      continue;
    }
    parts.push_back(part);
  }
  std::string out;
  for (auto p : parts) {
    out += '/';
    out += p;
  }
  return out.empty() ? "/" : out;
}

namespace {

// /proc/self/root/x (or /proc/<pid>/root/x: every process of the sandbox shares one root) is
// /x. Without this a read of /proc/self/root/home/u/.ssh/id_rsa met no rule of ~/.ssh.
// /proc/self/cwd, /proc/self/fd and /dev/fd stay as written: what they lead to depends on the
// process (policy/code_env.cc never takes them for a safe directory).
std::string resolve_proc_root(std::string abs) {
  if (abs.rfind("/proc/", 0) != 0) return abs;
  const std::size_t slash = abs.find('/', 6);
  if (slash == std::string::npos) return abs;
  const std::string_view who = std::string_view(abs).substr(6, slash - 6);
  const bool process =
      who == "self" || who == "thread-self" ||
      (!who.empty() && who.find_first_not_of("0123456789") == std::string_view::npos);
  const std::string_view rest = std::string_view(abs).substr(slash);
  if (!process || !(rest == "/root" || rest.starts_with("/root/"))) return abs;
  return rest.size() == 5 ? "/" : std::string(rest.substr(5));
}

}  // namespace

std::string canonical_path(std::string_view path, std::string_view cwd) {
  std::string abs = resolve_proc_root(lexical_absolute(path, cwd));
  if (is_under(abs, "/dev") || is_under(abs, "/proc")) return abs;
  // Try the whole path, then ever shorter prefixes; the missing tail is appended as is.
  std::string head = abs, tail;
  for (int guard = 0; guard < 4096; ++guard) {
    char buf[PATH_MAX];
    if (::realpath(head.c_str(), buf) != nullptr) {
      std::string real(buf);
      if (tail.empty()) return real;
      return lexical_absolute(tail, real);
    }
    if (head == "/") break;
    auto slash = head.rfind('/');
    std::string last = head.substr(slash + 1);
    tail = tail.empty() ? last : last + "/" + tail;
    head = slash == 0 ? "/" : head.substr(0, slash);
  }
  return abs;
}

std::string workspace_root(const std::string& workspace) {
  auto canonical = canonical_workspace(workspace);
  return canonical ? *canonical : canonical_path(workspace, "/");
}

std::string PathCache::canonical(std::string_view path, std::string_view cwd) {
  std::string abs = resolve_proc_root(lexical_absolute(path, cwd));
  if (is_under(abs, "/dev") || is_under(abs, "/proc")) return abs;
  std::size_t done = 0;  // abs[0, done) is known to exist with no symlink in it
  if (root_ != nullptr && *root_ != "/" && is_under(abs, *root_)) done = root_->size();
  for (const auto& p : plain_)
    if (p.size() > done && is_under(abs, p)) done = p.size();
  // One component at a time: readlink(2) tells a symlink (resolve the whole path the slow
  // way) from a plain entry (EINVAL) from a missing one (the rest stays as written, which
  // is what canonical_path appends to the realpath of the existing part).
  while (done < abs.size()) {
    std::size_t next = abs.find('/', done + 1);
    if (next == std::string::npos) next = abs.size();
    const std::string prefix = abs.substr(0, next);
    char byte;
    if (::readlink(prefix.c_str(), &byte, 1) >= 0) return canonical_path(abs, "/");
    if (errno != EINVAL) return abs;
    if (plain_.size() < 64) plain_.push_back(prefix);
    done = next;
  }
  return abs;
}

bool is_under(std::string_view path, std::string_view root) {
  if (root == "/") return !path.empty() && path[0] == '/';
  if (path.size() < root.size() || path.substr(0, root.size()) != root) return false;
  return path.size() == root.size() || path[root.size()] == '/';
}

std::string_view base_name(std::string_view path) {
  while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  auto slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

}  // namespace moat::policy
