// agent/host_files.cc: the host-executed files a session created or changed (host_files.h).
#include "agent/host_files.h"

#include "sandbox/protect.h"

namespace moat::agent {

using nlohmann::json;

void HostFiles::set_workspace(const std::string& workspace) {
  prefix_ = workspace.empty() || workspace.back() == '/' ? workspace : workspace + "/";
}

void HostFiles::change(const std::string& path, bool present) {
  if (prefix_.empty() || path.rfind(prefix_, 0) != 0) return;
  const sandbox::HostExecutedPath* row = sandbox::host_executed_match(path.substr(prefix_.size()));
  if (row == nullptr) return;
  if (present) files_[path] = row->why;
  else files_.erase(path);
}

void HostFiles::add(const json& files_changed, bool truncated) {
  if (!files_changed.is_array()) {
    unknown_ = "moatd could not list the files a call changed";
    return;
  }
  if (truncated) unknown_ = "a call changed more files than its list holds";
  for (const json& c : files_changed) {
    if (!c.is_object()) continue;
    const std::string op = c.value("op", "");
    if (op == "rename") change(c.value("from", ""), false);
    change(c.value("path", ""), op != "delete");
  }
}

json HostFiles::to_json() const {
  json out = json::array();
  for (const auto& [path, why] : files_) out.push_back({{"path", path}, {"why", why}});
  return out;
}

std::string host_files_lines(const json& result) {
  std::string out;
  const auto files = result.find("host_executed");
  if (files != result.end() && files->is_array() && !files->empty()) {
    out += "moat: this session created or changed files a program on the host runs code from; "
           "read them before one opens this folder:\n";
    for (const json& f : *files)
      out += "moat:   " + f.value("path", "") + " (" + f.value("why", "") + ")\n";
  }
  const auto unknown = result.find("host_executed_unknown");
  if (unknown != result.end() && unknown->is_string())
    out += "moat: the files this session changed that the host runs code from are not all known (" +
           unknown->get<std::string>() + ")\n";
  return out;
}

}  // namespace moat::agent
