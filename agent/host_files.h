// agent/host_files.h: the files a session created or changed that a program on the host runs
// code from (issue 26 item 13), named when the session ends.
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <string>

namespace moat::agent {

// Gathers the calls' files_changed (moatd's, in each tool_call_end) and keeps those that are,
// or lie below, a row of the host-executed table (sandbox::host_executed_match, the table the
// sandbox masks from and `moat batch --apply` checks). The sandbox masks only such files that
// exist when a call starts, so a session can create new ones: the person reads them before a
// program on the host (an editor, direnv, git) opens the folder.
class HostFiles {
 public:
  // The workspace the calls' absolute paths lie in (the session event's "workspace").
  void set_workspace(const std::string& workspace);
  // One call's files_changed: an array of {"path", "op", "from"?}, or null when moatd could
  // not say (then what the session changed is not known, and the end says so).
  void add(const nlohmann::json& files_changed, bool truncated);
  // [{"path", "why"}] by path: the files present at the end (a file created and then deleted
  // runs nothing).
  nlohmann::json to_json() const;
  // Why the list may be incomplete; "" when every call's list was whole.
  const std::string& unknown() const { return unknown_; }

 private:
  void change(const std::string& path, bool present);

  std::string prefix_;                        // the workspace with a trailing '/'
  std::map<std::string, std::string> files_;  // absolute path -> the row's why
  std::string unknown_;
};

// The end-of-session lines a person reads: each file and why; "" when there are none.
std::string host_files_lines(const nlohmann::json& result);

}  // namespace moat::agent
