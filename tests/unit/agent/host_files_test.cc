// tests/unit/agent/host_files_test.cc: which of a session's changed files are named at its end
// as files the host runs code from (agent/host_files.h).
#include "agent/host_files.h"

#include <gtest/gtest.h>

namespace moat::agent {
namespace {

using nlohmann::json;

std::vector<std::string> paths(const HostFiles& h) {
  std::vector<std::string> out;
  for (const json& f : h.to_json()) out.push_back(f.value("path", ""));
  return out;
}

TEST(HostFiles, KeepsHostExecutedPathsThatAreStillThereAfterRenamesAndDeletes) {
  HostFiles h;
  h.set_workspace("/w");
  h.add(json::parse(R"([{"path":"/w/a/.envrc","op":"create"},
                        {"path":"/w/notes.txt","op":"create"},
                        {"path":"/w/.vscode/tasks.json","op":"modify"},
                        {"path":"/w/b/.envrc","op":"create"},
                        {"path":"/elsewhere/.envrc","op":"create"}])"),
        false);
  h.add(json::parse(R"([{"path":"/w/b/.envrc","op":"delete"},
                        {"path":"/w/a/envrc.txt","op":"rename","from":"/w/a/.envrc"},
                        {"path":"/w/.idea/workspace.xml","op":"rename","from":"/w/x.xml"}])"),
        false);
  EXPECT_EQ(paths(h), (std::vector<std::string>{"/w/.idea/workspace.xml", "/w/.vscode/tasks.json"}));
  EXPECT_NE(h.to_json()[0].value("why", "").find("JetBrains"), std::string::npos);
  EXPECT_EQ(h.unknown(), "");
}

TEST(HostFiles, AMissingOrCappedListMakesTheNamesIncompleteAndSaysSo) {
  HostFiles h;
  h.set_workspace("/w/");
  h.add(json::array(), true);
  EXPECT_NE(h.unknown().find("more files than its list holds"), std::string::npos);
  h.add(nullptr, false);
  EXPECT_NE(h.unknown().find("could not list"), std::string::npos);
  const std::string lines = host_files_lines(
      {{"host_executed", json::array({{{"path", "/w/.envrc"}, {"why", "direnv: runs it"}}})},
       {"host_executed_unknown", h.unknown()}});
  EXPECT_NE(lines.find("moat:   /w/.envrc (direnv: runs it)\n"), std::string::npos) << lines;
  EXPECT_NE(lines.find("are not all known (moatd could not list"), std::string::npos) << lines;
  EXPECT_EQ(host_files_lines(json{{"host_executed", json::array()}}), "");
}

}  // namespace
}  // namespace moat::agent
