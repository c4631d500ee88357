// tests/unit/base/include_layers_test.cc: types down, verbs up (issue 28 point 2). Inside a
// folder the units (foo.h + foo.cc are one unit) and their `#include "folder/x.h"` arrows form
// an acyclic graph, so every include goes down one order; a shared type lives in a small header
// below both users, never in the folder's top header. Between folders an include goes only to a
// folder below (DESIGN.md's table). The test reads the sources under MOAT_SOURCE_ROOT; a
// failure names the cycle with its include lines (file:line).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "tests/unit/sessions/temp_dir.h"

namespace moat {
namespace {

namespace fs = std::filesystem;

// The folders whose units must not include each other in a circle.
const char* const kFolders[] = {"base",    "policy", "sessions",    "tools",
                                "sandbox", "agent",  "agent/batch", "agent/providers"};

// Which folders each folder may include (DESIGN.md "Layout"); a subfolder of agent/ is agent.
struct Layer {
  const char* folder;
  std::set<std::string> may_include;
};
const Layer kLayers[] = {
    {"base", {}},
    {"policy", {"base"}},
    {"sessions", {"base"}},
    {"tools", {"base"}},
    {"sandbox", {"base", "policy", "sessions", "tools"}},
    {"agent", {"base", "policy", "sessions", "tools", "sandbox"}},
};

struct Include {
  std::string file;  // relative to the source root: "policy/match.h"
  int line = 0;
  std::string target;  // as written: "policy/policy.h"
  std::string where() const { return file + ":" + std::to_string(line); }
};

// The quoted includes of the .h and .cc files directly in `folder`.
std::vector<Include> includes_in(const fs::path& root, const std::string& folder) {
  static const std::regex kInclude(R"re(^\s*#\s*include\s+"([^"]+)")re");
  std::vector<Include> out;
  if (!fs::is_directory(root / folder)) return out;
  for (const auto& entry : fs::directory_iterator(root / folder)) {
    const auto ext = entry.path().extension();
    if (!entry.is_regular_file() || (ext != ".h" && ext != ".cc")) continue;
    std::ifstream in(entry.path());
    std::string text;
    std::smatch m;
    for (int line = 1; std::getline(in, text); ++line)
      if (std::regex_search(text, m, kInclude))
        out.push_back({folder + "/" + entry.path().filename().string(), line, m[1]});
  }
  return out;
}

// "policy/match.h" -> "policy/match": the unit a file belongs to.
std::string unit_of(const std::string& path) { return fs::path(path).replace_extension().string(); }

struct Arrow {
  std::string to;
  std::string where;
};
using Graph = std::map<std::string, std::vector<Arrow>>;

// Units of `folders` and their arrows to other units of those folders.
Graph unit_graph(const fs::path& root, const std::set<std::string>& folders) {
  Graph g;
  for (const std::string& folder : folders)
    for (const Include& inc : includes_in(root, folder)) {
      if (!folders.count(fs::path(inc.target).parent_path().string())) continue;
      const std::string from = unit_of(inc.file), to = unit_of(inc.target);
      g[to];
      if (from != to) g[from].push_back({to, inc.where()});
    }
  return g;
}

// Strongly connected components of more than one unit (Tarjan).
class Cycles {
 public:
  explicit Cycles(const Graph& g) : g_(g) {
    for (const auto& [unit, arrows] : g_)
      if (!index_.count(unit)) visit(unit);
  }
  const std::vector<std::set<std::string>>& found() const { return found_; }

 private:
  void visit(const std::string& v) {
    index_[v] = low_[v] = next_++;
    stack_.push_back(v);
    on_stack_.insert(v);
    for (const Arrow& a : g_.at(v)) {
      if (!index_.count(a.to)) {
        visit(a.to);
        low_[v] = std::min(low_[v], low_[a.to]);
      } else if (on_stack_.count(a.to)) {
        low_[v] = std::min(low_[v], index_[a.to]);
      }
    }
    if (low_[v] == index_[v]) pop_component(v);
  }
  void pop_component(const std::string& root) {
    std::set<std::string> comp;
    std::string w;
    do {
      w = stack_.back();
      stack_.pop_back();
      on_stack_.erase(w);
      comp.insert(w);
    } while (w != root);
    if (comp.size() > 1) found_.push_back(comp);
  }

  const Graph& g_;
  std::map<std::string, int> index_, low_;
  std::vector<std::string> stack_;
  std::set<std::string> on_stack_;
  std::vector<std::set<std::string>> found_;
  int next_ = 0;
};

// One shortest circle through the component's first unit, each arrow with its include line.
std::string shortest_circle(const Graph& g, const std::set<std::string>& comp) {
  const std::string start = *comp.begin();
  std::map<std::string, const Arrow*> came_by;
  std::map<std::string, std::string> came_from;
  std::deque<std::string> todo = {start};
  while (!todo.empty() && !came_by.count(start)) {
    const std::string v = todo.front();
    todo.pop_front();
    for (const Arrow& a : g.at(v))
      if (comp.count(a.to) && !came_by.count(a.to)) {
        came_by[a.to] = &a;
        came_from[a.to] = v;
        todo.push_back(a.to);
      }
  }
  std::vector<std::string> steps;
  std::string at = start;
  do {
    steps.push_back(came_from[at] + " -> " + at + " (" + came_by[at]->where + ")");
    at = came_from[at];
  } while (at != start);
  std::reverse(steps.begin(), steps.end());
  std::string out;
  for (const auto& s : steps) out += "\n    " + s;
  return out;
}

// Every unit cycle through `folders`, named with its units, one circle and all its include lines.
std::string cycles_in(const fs::path& root, const std::set<std::string>& folders) {
  const Graph g = unit_graph(root, folders);
  const std::string folder = *folders.begin();
  std::string out;
  const Cycles cycles(g);
  for (const auto& comp : cycles.found()) {
    out += "\n  " + folder + ": a cycle of";
    for (const auto& u : comp) out += " " + u;
    out += "; for example:" + shortest_circle(g, comp) + "\n   all its includes:";
    for (const auto& u : comp)
      for (const Arrow& a : g.at(u))
        if (comp.count(a.to)) out += "\n    " + a.where + " includes " + a.to + ".h";
  }
  return out;
}

std::string top_folder(const std::string& path) { return path.substr(0, path.find('/')); }

const Layer* layer_of(const std::string& folder) {
  for (const Layer& l : kLayers)
    if (folder == l.folder) return &l;
  return nullptr;
}

// Includes from a file in `folder` to a folder it may not include.
std::string upward_includes(const fs::path& root, const std::string& folder) {
  std::string out;
  const Layer* from = layer_of(top_folder(folder));
  for (const Include& inc : includes_in(root, folder)) {
    const std::string to = top_folder(inc.target);
    if (to == from->folder || !layer_of(to) || from->may_include.count(to)) continue;
    out += "\n  " + inc.where() + " includes " + inc.target + " (" + from->folder +
           "/ may not include " + to + "/)";
  }
  return out;
}

fs::path source_root() {
  const char* root = std::getenv("MOAT_SOURCE_ROOT");
  return root ? fs::path(root) : fs::path(MOAT_SOURCE_ROOT);
}

TEST(IncludeLayers, NoFolderHasAnIncludeCycleBetweenItsUnits) {
  const fs::path root = source_root();
  ASSERT_TRUE(fs::exists(root / "sandbox/protocol.h")) << "no sources under " << root;
  std::string found;
  for (const char* folder : kFolders) found += cycles_in(root, {folder});
  EXPECT_TRUE(found.empty())
      << "include cycles (move the shared type down into a small header below both):" << found;
}

// agent/ includes agent/batch/ and agent/providers/, and they include agent/'s small headers
// (provider.h, cli.h, visible.h): the units of the three together must not form a circle.
TEST(IncludeLayers, NoCycleRunsThroughAgentAndItsSubfolders) {
  const std::string found = cycles_in(source_root(), {"agent", "agent/batch", "agent/providers"});
  EXPECT_TRUE(found.empty()) << "include cycles between agent/ and its subfolders:" << found;
}

TEST(IncludeLayers, NoFolderIncludesAFolderAboveIt) {
  const fs::path root = source_root();
  ASSERT_TRUE(fs::exists(root / "sandbox/protocol.h")) << "no sources under " << root;
  std::string found;
  for (const char* folder : kFolders) found += upward_includes(root, folder);
  EXPECT_TRUE(found.empty()) << "includes that go up between folders:" << found;
}

// The check itself, on a small tree of real files: a cycle through a .cc and a .h is named with
// both include lines; an include down the order is not a cycle.
class IncludeLayersCheck : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(dir_.path().empty()) << "mkdtemp failed";
    fs::create_directories(root_ / "policy");
  }
  void write(const std::string& rel, const std::string& text) {
    std::ofstream(root_ / rel) << text;
  }
  sessions::testing::TempDir dir_;
  fs::path root_ = dir_.path();
};

TEST_F(IncludeLayersCheck, ACycleIsNamedWithItsIncludeLines) {
  write("policy/policy.h", "#pragma once\n#include \"policy/match.h\"\n");
  write("policy/match.h", "#pragma once\n#include \"base/result.h\"\n");
  write("policy/match.cc", "// x\n\n#include \"policy/policy.h\"\n");
  write("policy/schema.h", "#pragma once\n");
  write("policy/policy.cc", "#include \"policy/schema.h\"\n#include \"sandbox/protocol.h\"\n");
  const std::string found = cycles_in(root_, {"policy"});
  EXPECT_NE(found.find("a cycle of policy/match policy/policy"), std::string::npos) << found;
  EXPECT_NE(found.find("policy/policy.h:2 includes policy/match.h"), std::string::npos) << found;
  EXPECT_NE(found.find("policy/match.cc:3 includes policy/policy.h"), std::string::npos) << found;
  EXPECT_EQ(found.find("schema"), std::string::npos) << found;
  EXPECT_EQ(
      upward_includes(root_, "policy"),
      "\n  policy/policy.cc:2 includes sandbox/protocol.h (policy/ may not include sandbox/)");
}

TEST_F(IncludeLayersCheck, AnOrderedTreeHasNoCycle) {
  write("policy/policy.h", "#pragma once\n#include \"policy/match.h\"\n");
  write("policy/policy.cc", "#include \"policy/policy.h\"\n#include \"policy/schema.h\"\n");
  write("policy/match.h", "#pragma once\n#include \"policy/schema.h\"\n");
  write("policy/schema.h", "#pragma once\n#include \"base/result.h\"\n");
  EXPECT_EQ(cycles_in(root_, {"policy"}), "");
  EXPECT_EQ(upward_includes(root_, "policy"), "");
}

}  // namespace
}  // namespace moat
