// tests/unit/tools/registry_test.cc: the tool table answers, row by row, what the supervisor,
// the transcript, compaction and the system prompt used to work out from a tool's name.
#include "tools/registry.h"

#include <gtest/gtest.h>

#include <set>

namespace moat::tools {
namespace {

TEST(ToolTable, EveryRowNamesItsSpecAndSaysHowItRuns) {
  ASSERT_EQ(tool_table().size(), all_tools().size());
  std::set<std::string_view> names;
  for (std::size_t i = 0; i < tool_table().size(); ++i) {
    const Tool& row = *tool_table()[i];
    SCOPED_TRACE(std::string(row.name));
    EXPECT_TRUE(names.insert(row.name).second) << "two rows share a name";
    EXPECT_EQ(all_tools()[i].name, row.name);
    EXPECT_EQ(row_of(row.name), &row);
    // Exactly one way to run: its own, or a file operation in a worker.
    EXPECT_NE(row.run != nullptr, row.file.has_value());
    if (row.file) {
      EXPECT_NE(row.file->op, nullptr);
      EXPECT_EQ(row.file->external.empty(), row.file->run_external == nullptr);
    }
    // A mutating tool changes files; the file it names is then one it changed.
    if (all_tools()[i].mutates) {
      EXPECT_TRUE(row.changes_files);
    }
  }
  EXPECT_EQ(row_of("no-such-tool"), nullptr);
}

TEST(ToolTable, OnlyBashHasACommandLineForThePolicyToJudge) {
  EXPECT_EQ(command_to_judge("bash", {{"command", "make test"}}), "make test");
  EXPECT_EQ(command_to_judge("bash", {{"command", 7}}), std::nullopt);
  EXPECT_EQ(command_to_judge("bash", "not an object"), std::nullopt);
  for (const char* tool : {"read", "edit", "write", "grep", "find", "ls", "nope"})
    EXPECT_EQ(command_to_judge(tool, {{"command", "make"}, {"path", "a"}}), std::nullopt) << tool;
}

TEST(ToolTable, TheSummaryIsTheCommandLineElseTheArguments) {
  EXPECT_EQ(call_summary("bash", {{"command", "ls -la"}}), "ls -la");
  EXPECT_EQ(call_summary("bash", {{"command", 1}}), "command=1");
  EXPECT_EQ(call_summary("grep", {{"pattern", "needle"}, {"path", "src"}}), "path=src pattern=needle");
  EXPECT_EQ(call_summary("find", {{"pattern", "a b"}}), R"(pattern="a b")");
}

// Issue 27 item 18: a file tool's line names the file, not its arguments as JSON.
TEST(ToolTable, AFileToolsSummaryIsItsFile) {
  EXPECT_EQ(call_summary("read", {{"path", "calc/core.py"}, {"offset", 3}}), "calc/core.py");
  EXPECT_EQ(call_summary("write", {{"path", "a.txt"}, {"content", "x\ny"}}), "a.txt");
  const nlohmann::json one = {{"oldText", "a"}, {"newText", "b"}};
  EXPECT_EQ(call_summary("edit", {{"path", "calc/core.py"}, {"edits", {one}}}),
            "calc/core.py (1 edit)");
  EXPECT_EQ(call_summary("edit", {{"path", "b.py"}, {"edits", {one, one}}}), "b.py (2 edits)");
}

TEST(ToolTable, ReadEditAndWriteNameTheFileTheyTouchAndSearchesDoNot) {
  auto read = touched_file("read", {{"path", "a.txt"}, {"offset", 2}});
  ASSERT_TRUE(read.has_value());
  EXPECT_EQ(read->path, "a.txt");
  EXPECT_FALSE(read->changed);
  for (const char* tool : {"edit", "write"}) {
    auto changed = touched_file(tool, {{"path", "b.txt"}});
    ASSERT_TRUE(changed.has_value()) << tool;
    EXPECT_EQ(changed->path, "b.txt");
    EXPECT_TRUE(changed->changed);
  }
  for (const char* tool : {"grep", "find", "ls", "bash", "nope"})
    EXPECT_FALSE(touched_file(tool, {{"path", "src"}, {"pattern", "x"}})) << tool;
  EXPECT_FALSE(touched_file("read", {{"path", ""}}));
  EXPECT_FALSE(touched_file("read", {{"path", 3}}));
}

TEST(ToolTable, GuidelinesFollowTheGrantedSetInThePromptsOrder) {
  const std::vector<std::string> all = {"read", "bash", "edit", "write", "grep", "find", "ls"};
  const std::vector<std::string> expected_all = {
      "Explore with grep, find and ls before bash: they are bounded and faster.",
      "Read a file before changing it; read large files in ranges.",
      "Use edit for changes: the old text must match the file exactly and be unique.",
      "Use write only for new files or complete rewrites.",
      "Run the project's tests with bash after a change; the sandbox has no network unless the "
      "policy allows it."};
  EXPECT_EQ(guidelines(all), expected_all);
  const std::vector<std::string> expected_bash_write = {
      "Explore with bash (rg, find, ls); keep outputs short.",
      "Use write to create or replace whole files.",
      "Run the project's tests with bash after a change; the sandbox has no network unless the "
      "policy allows it."};
  EXPECT_EQ(guidelines({"write", "bash"}), expected_bash_write);
  const std::vector<std::string> expected_read_only = {
      "Explore with grep, find and ls before bash: they are bounded and faster.",
      "Read a file before changing it; read large files in ranges.",
      "You cannot modify files: describe the changes you would make instead."};
  EXPECT_EQ(guidelines({"ls", "read"}), expected_read_only);
}

TEST(ToolTable, EditRepairsATopLevelReplacementIntoEditsAndOtherToolsDoNot) {
  std::vector<std::string> notes;
  auto edit = repair_arguments("edit", {{"path", "f"}, {"oldText", "a"}, {"newText", "b"}}, &notes);
  EXPECT_EQ(edit["edits"], (nlohmann::json{{{"oldText", "a"}, {"newText", "b"}}}));
  EXPECT_EQ(notes, std::vector<std::string>{"oldText/newText: folded into edits[]"});
  notes.clear();
  auto write = repair_arguments("write", {{"path", "f"}, {"oldText", "a"}}, &notes);
  EXPECT_EQ(write, (nlohmann::json{{"path", "f"}, {"oldText", "a"}}));
  EXPECT_TRUE(notes.empty());
}

TEST(ToolTable, TheCommandCallRunsTheLineWithTheToolThatJudgesCommands) {
  const CommandCall call = command_call("make -j2", 30);
  EXPECT_EQ(command_to_judge(call.tool, call.arguments), "make -j2");
  EXPECT_EQ(call.arguments["timeout"], 30);
  EXPECT_FALSE(command_call("true", 0).arguments.contains("timeout"));
}

}  // namespace
}  // namespace moat::tools
