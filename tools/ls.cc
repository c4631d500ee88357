// tools/ls.cc: `ls`.
#include "tools/ls.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "tools/gitignore.h"
#include "tools/resolve.h"
#include "tools/schema.h"
#include "tools/truncate.h"

namespace moat::tools {
namespace {

ToolSpec ls_spec(const ToolLimits&) {
  ToolSpec s;
  s.description =
      "List a directory's entries, sorted alphabetically, including dotfiles; entries ignored by "
      ".gitignore are left out and directories end with '/'. Returns at most " +
      std::to_string(kLsDefaultLimit) + " entries by default (set limit for more) and at most " +
      format_size(kMaxBytes) + " of output.";
  s.parameters =
      object_schema({{"path", property("string", "Directory to list (default: the workspace)")},
                     {"limit", limit_property("entries", kLsDefaultLimit)}});
  return s;
}

ToolResult ls_in_sandbox(const std::string& canonical, const nlohmann::json& args) {
  auto fd = open_canonical(canonical, O_RDONLY | O_DIRECTORY);
  if (!fd) {
    if (fd.error().code == ENOTDIR)
      return ToolResult::error(canonical + " is not a directory; use read for files");
    return ToolResult::error("cannot list " + canonical + ": " + fd.error().message());
  }
  DIR* d = ::fdopendir(fd->release());
  if (d == nullptr)
    return ToolResult::error("cannot list " + canonical + ": " + std::strerror(errno));
  std::unique_ptr<DIR, int (*)(DIR*)> owner(d, &::closedir);
  GitIgnore ignore;
  std::vector<std::pair<std::string, bool>> entries;  // name, is a directory
  while (const dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    struct stat st {};
    const bool is_dir =
        ::fstatat(::dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
    const std::string path = canonical == "/" ? "/" + name : canonical + "/" + name;
    if (ignore.is_ignored(path, is_dir)) continue;
    entries.emplace_back(std::move(name), is_dir);
  }
  if (entries.empty()) return ToolResult::text("(empty directory)");
  std::sort(entries.begin(), entries.end());  // by name; the '/' is added after sorting
  std::vector<std::string> names;
  for (const auto& [name, is_dir] : entries) names.push_back(is_dir ? name + "/" : name);
  CappedList list = cap_list(std::move(names), args.value("limit", kLsDefaultLimit), "entries");
  std::string text = std::move(list.truncation.text);
  if (!text.empty() && text.back() == '\n') text.pop_back();
  ToolResult r = ToolResult::text(append_notices(std::move(text), list.notices));
  r.details = {{"entries", list.kept}, {"truncated", !list.notices.empty()}};
  return r;
}

}  // namespace

const Tool kLsTool = {
    .name = "ls", .spec = &ls_spec, .file = search_op(&ls_in_sandbox), .explores = true};

}  // namespace moat::tools
