// sessions/jsonl.cc: whole-line JSONL file primitives.
#include "sessions/jsonl.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "base/sys.h"

namespace moat::sessions {

std::vector<Line> whole_lines(std::string_view data, size_t* torn_bytes) {
  std::vector<Line> lines;
  size_t start = 0;
  while (start < data.size()) {
    const size_t nl = data.find('\n', start);
    if (nl == std::string_view::npos) break;
    lines.push_back(Line{data.substr(start, nl - start), start});
    start = nl + 1;
  }
  if (torn_bytes != nullptr) *torn_bytes = data.size() - start;
  return lines;
}

Result<std::string> read_file(const std::string& path) {
  MOAT_ASSIGN_OR_RETURN(UniqueFd fd, sys::open_path(path, O_RDONLY));
  auto data = sys::read_to_end(fd.get());
  if (!data) return fail(data.error().with_context(path));
  return data;
}

Result<UniqueFd> open_for_append(const std::string& path, bool create, mode_t mode) {
  int flags = O_WRONLY | O_APPEND;
  if (create) flags |= O_CREAT | O_EXCL;
  return sys::open_path(path, flags, mode);
}

Result<void> append_line(int fd, std::string_view line, off_t size_before) {
  for (;;) {
    ssize_t n = ::write(fd, line.data(), line.size());
    if (n < 0 && errno == EINTR) continue;  // nothing was written: safe to retry whole
    if (n == static_cast<ssize_t>(line.size())) return {};
    const int err = n < 0 ? errno : ENOSPC;
    if (n > 0 && ::ftruncate(fd, size_before) != 0)
      return fail(Error::from_errno("ftruncate after short write", errno));
    return fail(Error::from_errno("write", err));
  }
}

Result<void> make_dirs(const std::string& path, mode_t mode) {
  if (path.empty()) return fail(Error::msg("make_dirs: empty path"));
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = path.find('/', pos + 1);
    const std::string prefix = path.substr(0, pos);
    if (prefix.empty()) continue;
    if (::mkdir(prefix.c_str(), mode) != 0 && errno != EEXIST)
      return fail(Error::from_errno("mkdir", errno, prefix));
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return fail(Error::from_errno("stat", errno, path));
  if (!S_ISDIR(st.st_mode)) return fail(Error::from_errno("mkdir", ENOTDIR, path));
  return {};
}

Result<void> fsync_dir(const std::string& dir) {
  MOAT_ASSIGN_OR_RETURN(UniqueFd fd, sys::open_path(dir, O_RDONLY | O_DIRECTORY));
  if (::fsync(fd.get()) != 0) return fail(Error::from_errno("fsync", errno, dir));
  return {};
}

std::string dirname_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

}  // namespace moat::sessions
