// sandbox/files_changed.cc: the workspace index's diff as a call record's fields.
#include "sandbox/files_changed.h"

#include <sys/stat.h>

#include <cstdio>

namespace moat::sandbox {
namespace {

using nlohmann::json;

json version_json(const FileVersion& v, bool withhold) {
  char mode[8];
  std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(v.mode & 07777));
  json out = {{"sha256", v.sha256.empty() || withhold ? json(nullptr) : json(v.sha256)},
              {"size", v.size},
              {"mode", mode},
              {"type", S_ISLNK(v.mode) ? "symlink" : "file"}};
  if (withhold) out["withheld"] = "the policy does not allow reading this path";
  else if (v.unhashed != nullptr) out["unhashed"] = v.unhashed;
  return out;
}

json side_json(const std::optional<FileVersion>& v, bool withhold) {
  return v ? version_json(*v, withhold) : json(nullptr);
}

}  // namespace

json files_changed_fields(SessionState& session) {
  if (!session.files)
    return {{"files_changed", nullptr}, {"files_changed_error", session.files_error}};
  auto diff = session.files->diff();
  if (!diff) return {{"files_changed", nullptr}, {"files_changed_error", diff.error().message()}};
  const std::string prefix = session.workspace == "/" ? "/" : session.workspace + "/";
  auto withheld = [&](const std::string& path) {
    return session.policy && session.policy->decide_path(path, policy::Access::kRead).verdict !=
                                 policy::Verdict::kAllow;
  };
  json list = json::array();
  for (const FileChange& c : diff->changes) {
    const std::string path = prefix + c.path;
    json item = {{"path", path}, {"op", file_op_name(c.op)}};
    if (c.op == FileOp::kRename) item["from"] = prefix + c.from;
    item["before"] =
        side_json(c.before, withheld(c.op == FileOp::kRename ? prefix + c.from : path));
    item["after"] = side_json(c.after, withheld(path));
    list.push_back(std::move(item));
  }
  return {{"files_changed", std::move(list)}, {"files_changed_truncated", diff->truncated}};
}

json remove_nested_git(SessionState& session) {
  json out = json::array();
  if (!session.nested_git) return out;
  // The protected names whatever the policy says: [workspace] nested_git is about nested ones.
  std::vector<RemovedGit> found = session.nested_git->sweep_created();
  if (!session.policy || !session.policy->nested_git_allowed())
    for (RemovedGit& g : session.nested_git->sweep()) found.push_back(std::move(g));
  const std::string prefix = session.workspace == "/" ? "/" : session.workspace + "/";
  for (const RemovedGit& g : found) {
    json item = {{"path", g.path.empty() ? session.workspace : prefix + g.path},
                 {"type", g.type},
                 {"removed", g.error.empty()}};
    if (!g.error.empty()) item["error"] = g.error;
    if (g.protected_name) item["reason"] = kProtectedNameReason;
    out.push_back(std::move(item));
  }
  return out;
}

std::string nested_git_note(const json& removed) {
  std::string note;
  for (const json& g : removed) {
    const std::string path = g.value("path", "");
    const std::string why = g.value("reason", std::string(kNestedGitReason));
    note += note.empty() ? "" : "\n";
    note += g.value("removed", false) ? "[moat removed " + path + ": " + why + "]"
                                      : "[moat could not remove " + path + " (" +
                                            g.value("error", "") + "): " + why + "]";
  }
  return note;
}

}  // namespace moat::sandbox
