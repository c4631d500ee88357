// base/workspace_path.cc: a workspace's canonical name and its refusal text (see
// workspace_path.h).
#include "base/workspace_path.h"

#include <sys/stat.h>

#include <cerrno>
#include <climits>
#include <cstdlib>

#include "base/log.h"

namespace moat {

Error workspace_refused(std::string_view path, const Error& why) {
  return Error{why.code, "workspace " + moat::quoted(path) + ": " + why.context};
}

bool is_normalized_absolute(std::string_view p) {
  if (p.size() < 2 || p[0] != '/' || p.back() == '/' || p.find('\0') != std::string_view::npos)
    return false;
  std::size_t start = 1;
  while (start <= p.size()) {
    std::size_t end = p.find('/', start);
    if (end == std::string_view::npos) end = p.size();
    const std::string_view part = p.substr(start, end - start);
    if (part.empty() || part == "." || part == "..") return false;
    start = end + 1;
  }
  return true;
}

Result<std::string> real_path(const std::string& path) {
  char real[PATH_MAX];
  if (::realpath(path.c_str(), real) == nullptr)
    return fail(Error{errno, "cannot be resolved"});  // callers name the path (and its option)
  return std::string(real);
}

Result<std::string> canonical_workspace(const std::string& path) {
  const std::string p = path.empty() ? "." : path;
  auto real = real_path(p);
  if (!real) return fail(workspace_refused(p, real.error()));
  struct stat st {};
  if (::stat(real->c_str(), &st) != 0)
    return fail(workspace_refused(p, Error::from_errno("stat", errno, *real)));
  if (!S_ISDIR(st.st_mode)) return fail(workspace_refused(p, Error{ENOTDIR, "not a directory"}));
  return real;
}

}  // namespace moat
