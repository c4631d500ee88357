// tests/unit/tools/tool_names_test.cc: no tool is known by name outside tools/. Every fact
// about a tool is in its row (tools/tool_row.h); code in agent/, sandbox/ and sessions/ that
// spelled "bash" or "edit" would drift from the table the day a tool is added or renamed.
// The test reads those folders' sources and fails on any string literal that is a tool's
// name, except the few listed below that are not tool names at all.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "tools/registry.h"

namespace moat::tools {
namespace {

namespace fs = std::filesystem;

struct Literal {
  int line = 0;
  std::string text;
};

bool is_identifier_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// The end of a quoted literal starting at `open` (the index just past its closing quote).
std::size_t skip_quoted(std::string_view src, std::size_t open) {
  const char quote = src[open];
  std::size_t i = open + 1;
  while (i < src.size() && src[i] != quote && src[i] != '\n') i += src[i] == '\\' ? 2 : 1;
  return i + 1;
}

int newlines(std::string_view s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }

// The string literals of a C++ source, comments left out; raw strings included.
std::vector<Literal> string_literals(std::string_view src) {
  std::vector<Literal> out;
  int line = 1;
  std::size_t i = 0;
  while (i < src.size()) {
    const char c = src[i];
    const char next = i + 1 < src.size() ? src[i + 1] : '\0';
    std::size_t end = i + 1;
    if (c == '/' && next == '/') {
      end = src.find('\n', i);
    } else if (c == '/' && next == '*') {
      end = src.find("*/", i + 2);
      if (end != std::string_view::npos) end += 2;
    } else if (c == 'R' && next == '"' &&
               (i == 0 || !is_identifier_char(src[i - 1]) || src[i - 1] == '8' ||
                src[i - 1] == 'L')) {
      const std::size_t paren = src.find('(', i + 2);
      const std::string close = ")" + std::string(src.substr(i + 2, paren - i - 2)) + "\"";
      const std::size_t stop = src.find(close, paren);
      out.push_back({line, std::string(src.substr(paren + 1, stop - paren - 1))});
      end = stop + close.size();
    } else if (c == '"') {
      end = skip_quoted(src, i);
      out.push_back({line, std::string(src.substr(i + 1, end - i - 2))});
    } else if (c == '\'' && (i == 0 || !is_identifier_char(src[i - 1]))) {
      end = skip_quoted(src, i);  // a character literal; after a digit it is a separator
    }
    if (end == std::string_view::npos || end > src.size()) end = src.size();
    line += newlines(src.substr(i, end - i));
    i = end;
  }
  return out;
}

// Literals that spell a tool's name without meaning the tool, file by file, with the reason.
struct Allowed {
  const char* file;  // relative to the source root
  const char* literal;
  const char* reason;
};
const Allowed kAllowed[] = {
    {"sandbox/sys.cc", "read", "the read(2) syscall named in Error::from_errno"},
    {"sandbox/sys.cc", "write", "the write(2) syscall named in Error::from_errno"},
    {"sandbox/ns_user.cc", "write", "the write(2) syscall named in Error::from_errno"},
    {"sandbox/seccomp_sets.cc", "read", "a syscall of the seccomp allow table"},
    {"sandbox/seccomp_sets.cc", "write", "a syscall of the seccomp allow table"},
    {"sessions/jsonl.cc", "read", "the read(2) syscall named in Error::from_errno"},
    {"sessions/jsonl.cc", "write", "the write(2) syscall named in Error::from_errno"},
    {"agent/cli_sessions.cc", "write", "the write(2) syscall named in Error::from_errno"},
    {"agent/cli_policy.cc", "read", "a path access of `moat policy explain --access`"},
    {"agent/cli_policy.cc", "write", "a path access of `moat policy explain --access`"},
    {"sandbox/call_gate.cc", "read", "a path access recorded in the audit's decision input"},
    {"sandbox/call_gate.cc", "write", "a path access recorded in the audit's decision input"},
    {"sandbox/session_init.cc", "write", "the write(2) syscall named in Error::from_errno"},
    {"agent/cli_completion.cc", "bash", "the shell a completion script is written for"},
    {"agent/cli_mcp.cc", "read", "the read key of an [[mcp.server]] in moat mcp list --json"},
};

bool is_allowed(const std::string& file, const std::string& literal) {
  for (const auto& a : kAllowed)
    if (file == a.file && literal == a.literal) return true;
  return false;
}

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(ToolNames, NoSourceOutsideToolsComparesOrSpellsAToolName) {
  const char* root_env = std::getenv("MOAT_SOURCE_ROOT");
  ASSERT_NE(root_env, nullptr) << "MOAT_SOURCE_ROOT is not set";
  const fs::path root(root_env);
  std::vector<std::string> found;
  std::size_t files = 0;
  for (const char* folder : {"agent", "sandbox", "sessions"}) {
    for (const auto& entry : fs::recursive_directory_iterator(root / folder)) {
      const auto ext = entry.path().extension();
      if (!entry.is_regular_file() || (ext != ".cc" && ext != ".h")) continue;
      ++files;
      const std::string rel = fs::relative(entry.path(), root).string();
      for (const Literal& lit : string_literals(read_all(entry.path())))
        for (const Tool* tool : tool_table())
          if (lit.text == tool->name && !is_allowed(rel, lit.text))
            found.push_back(rel + ":" + std::to_string(lit.line) + ": \"" + lit.text + "\"");
    }
  }
  EXPECT_GT(files, 50u) << "the sources were not found under " << root;
  std::string list;
  for (const auto& f : found) list += "\n  " + f;
  EXPECT_TRUE(found.empty()) << "tool names outside tools/ (ask tools/registry.h instead):" << list;
}

TEST(ToolNames, TheScannerSeesLiteralsAndSkipsComments) {
  const auto lits = string_literals(
      "// \"bash\" in a comment\n/* \"edit\"\n*/ f(\"read\", '\"', 1'000, R\"x(grep)x\");\n"
      "auto s = \"a\\\"b\";");
  ASSERT_EQ(lits.size(), 3u);
  EXPECT_EQ(lits[0].text, "read");
  EXPECT_EQ(lits[0].line, 3);
  EXPECT_EQ(lits[1].text, "grep");
  EXPECT_EQ(lits[2].text, "a\\\"b");
  EXPECT_EQ(lits[2].line, 4);
}

}  // namespace
}  // namespace moat::tools
