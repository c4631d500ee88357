// tools/walk.cc: openat/fdopendir descent; O_NOFOLLOW so a symlinked directory is never
// entered, whatever the sandboxed code planted.
#include "tools/walk.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <memory>

#include "base/unique_fd.h"
#include "tools/resolve.h"

namespace moat::tools {
namespace {

struct DirCloser {
  void operator()(DIR* d) const { ::closedir(d); }
};

EntryType type_of(int dirfd, const dirent* e) {
  unsigned char t = e->d_type;
  if (t == DT_UNKNOWN) {
    struct stat st {};
    if (::fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) return EntryType::kOther;
    if (S_ISREG(st.st_mode)) return EntryType::kFile;
    if (S_ISDIR(st.st_mode)) return EntryType::kDir;
    if (S_ISLNK(st.st_mode)) return EntryType::kSymlink;
    return EntryType::kOther;
  }
  if (t == DT_REG) return EntryType::kFile;
  if (t == DT_DIR) return EntryType::kDir;
  if (t == DT_LNK) return EntryType::kSymlink;
  return EntryType::kOther;
}

void walk_dir(int fd, const std::string& dir, const std::string& rel, GitIgnore& ignore,
              std::size_t max, std::vector<WalkEntry>* out) {
  // fdopendir takes the fd; dup it so the caller's stays valid.
  DIR* d = ::fdopendir(::fcntl(fd, F_DUPFD_CLOEXEC, 0));
  if (d == nullptr) return;
  std::unique_ptr<DIR, DirCloser> dir_owner(d);
  std::vector<std::pair<std::string, EntryType>> names;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == ".." || name == ".git") continue;
    names.emplace_back(name, type_of(fd, e));
  }
  std::sort(names.begin(), names.end());
  for (const auto& [name, type] : names) {
    if (out->size() >= max) return;
    const std::string path = dir == "/" ? "/" + name : dir + "/" + name;
    if (ignore.is_ignored(path, type == EntryType::kDir)) continue;
    const std::string child_rel = rel.empty() ? name : rel + "/" + name;
    out->push_back({path, child_rel, type});
    if (type != EntryType::kDir) continue;
    const int child = ::openat(fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (child < 0) continue;  // unreadable directories are skipped, like rg and fd
    UniqueFd child_fd(child);
    walk_dir(child_fd.get(), path, child_rel, ignore, max, out);
  }
}

}  // namespace

std::vector<WalkEntry> walk_tree(const std::string& root, GitIgnore& ignore, std::size_t max) {
  std::vector<WalkEntry> out;
  auto fd = open_canonical(root, O_RDONLY | O_DIRECTORY);
  if (!fd) return out;
  walk_dir(fd->get(), root, "", ignore, max, &out);
  return out;
}

bool path_less(std::string_view a, std::string_view b) {
  while (true) {
    const std::size_t sa = a.find('/');
    const std::size_t sb = b.find('/');
    const std::string_view ca = a.substr(0, sa);
    const std::string_view cb = b.substr(0, sb);
    if (ca != cb) return ca < cb;
    if (sa == std::string_view::npos || sb == std::string_view::npos)
      return sa == std::string_view::npos && sb != std::string_view::npos;
    a.remove_prefix(sa + 1);
    b.remove_prefix(sb + 1);
  }
}

}  // namespace moat::tools
