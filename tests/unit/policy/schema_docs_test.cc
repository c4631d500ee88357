// tests/unit/policy/schema_docs_test.cc: policy/schema.h is the single source; the loader's
// accepted keys and docs/policy.md must both agree with it, key by key and default by default.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>

#include "policy/toml_load.h"

namespace moat::policy {
namespace {

struct Field {
  std::string key;
  std::string default_text;  // "required" or what follows "default: "
};

std::string read(const std::string& rel) {
  std::ifstream in(std::string(MOAT_SOURCE_ROOT) + "/" + rel);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The comment line above a struct names its TOML table (see schema.h's header).
std::string table_of(const std::string& comment) {
  std::smatch m;
  static const std::regex kTop(R"(^\[top\]$)"),
      kUnless(R"(^\[\[(\w+)\]\]\.unless = \{ \.\.\. \}$)"), kArray(R"(^\[\[([\w.]+)\]\]$)"),
      kTable(R"(^\[(\w+)\]$)"), kTests(R"(^<rule>\.tests = \{ \.\.\. \}$)"),
      kInline(R"(^(\w+) = \{ \.\.\. \}$)");
  if (std::regex_match(comment, kTop)) return "top";
  if (std::regex_match(comment, m, kUnless)) return m[1].str() + ".unless";
  if (std::regex_match(comment, m, kArray)) return m[1];
  if (std::regex_match(comment, m, kTable)) return m[1];
  if (std::regex_match(comment, kTests)) return "tests";
  if (std::regex_match(comment, m, kInline)) return m[1];
  return "";
}

std::map<std::string, std::vector<Field>> schema_tables() {
  std::map<std::string, std::vector<Field>> out;
  std::istringstream in(read("policy/schema.h"));
  std::string line, prev, table;
  static const std::regex kField(R"(^\s+.+?\s+(\w+)(\s*=\s*[^;]+)?;\s*//\s*(.*)$)");
  static const std::regex kDoc(R"(^(required)\.\s.*|^default: (.*?)\. .*$)");
  while (std::getline(in, line)) {
    std::smatch m;
    if (line.rfind("struct ", 0) == 0 && line.back() == '{') {
      table = prev.rfind("// ", 0) == 0 ? table_of(prev.substr(3)) : "";
      if (!table.empty()) out[table];
    } else if (line.rfind("};", 0) == 0) {
      table.clear();
    } else if (!table.empty() && std::regex_match(line, m, kField)) {
      std::string doc = m[3];
      if (doc.rfind("(not a TOML key)", 0) == 0) continue;
      std::smatch d;
      EXPECT_TRUE(std::regex_match(doc, d, kDoc))
          << "schema.h field without default/required: " << line;
      out[table].push_back({m[1], d[1].matched ? "required" : d[2].str()});
    }
    prev = line;
  }
  return out;
}

std::string doc_key(const std::string& table, const std::string& key) {
  return table == "top" ? key : table + "." + key;
}

TEST(SchemaDocs, SchemaHeaderDescribesEveryTable) {
  auto tables = schema_tables();
  for (const char* t :
       {"top", "defaults", "resources", "layer", "exec", "constraints", "tests", "command",
        "command.unless", "path", "path.unless", "network", "tool", "tool.unless", "mcp", "mcp.server"}) {
    EXPECT_TRUE(tables.count(t)) << t;
    EXPECT_FALSE(tables[t].empty()) << t;
  }
}

TEST(SchemaDocs, LoaderAcceptsExactlyTheSchemaKeys) {
  for (const auto& [table, fields] : schema_tables()) {
    std::set<std::string> schema_keys, loader_keys;
    for (const auto& f : fields) schema_keys.insert(f.key);
    for (const auto& k : known_keys(table)) loader_keys.insert(k);
    EXPECT_EQ(schema_keys, loader_keys) << "table " << table;
  }
}

TEST(SchemaDocs, DocsListEveryKeyWithItsDefault) {
  const std::string docs = read("docs/policy.md");
  ASSERT_FALSE(docs.empty());
  for (const auto& [table, fields] : schema_tables()) {
    for (const auto& f : fields) {
      const std::string key = doc_key(table, f.key);
      const std::string row_start = "| `" + key + "` | ";
      auto pos = docs.find(row_start);
      ASSERT_NE(pos, std::string::npos) << "docs/policy.md has no row for " << key;
      std::string row = docs.substr(pos, docs.find('\n', pos) - pos);
      std::string cell =
          row.substr(row_start.size(), row.find(" | ", row_start.size()) - row_start.size());
      EXPECT_NE(cell.find(f.default_text), std::string::npos)
          << key << ": docs say " << cell << ", schema.h says " << f.default_text;
      // Four columns: key, default, meaning, example.
      EXPECT_GE(std::count(row.begin(), row.end(), '|') -
                    static_cast<long>(std::count(row.begin(), row.end(), '\\')),
                5)
          << "row without an example: " << row;
    }
  }
}

TEST(SchemaDocs, DocsListNoKeyTheSchemaLacks) {
  std::set<std::string> known;
  for (const auto& [table, fields] : schema_tables())
    for (const auto& f : fields) known.insert(doc_key(table, f.key));
  std::istringstream in(read("docs/policy.md"));
  std::string line;
  bool in_keys = false;
  std::set<std::string> seen;
  while (std::getline(in, line)) {
    if (line.rfind("## ", 0) == 0) in_keys = line == "## Keys";
    // std::regex is byte-unsafe on UTF-8 rows, so the key is cut out by hand.
    if (!in_keys || line.rfind("| `", 0) != 0) continue;
    std::string key = line.substr(3, line.find('`', 3) - 3);
    seen.insert(key);
    EXPECT_TRUE(known.count(key)) << "docs/policy.md documents an unknown key: " << key;
  }
  for (const auto& k : known) EXPECT_TRUE(seen.count(k)) << "the Keys section has no row for " << k;
}

// Each resources default as schema.h's comment writes it ("10m", "4GiB", 512), read by the
// loader as a policy's value would be, is the constexpr the code uses (kDefaultResources).
// With DocsListEveryKeyWithItsDefault, docs/policy.md, the comment and the code cannot drift.
TEST(SchemaDocs, ResourceDefaultsInTheCommentsAreTheConstexprValues) {
  const std::map<std::string, std::pair<std::optional<std::int64_t> Resources::*,
                                        std::int64_t ResourceCeilings::*>>
      members = {{"wall_time", {&Resources::wall_time, &ResourceCeilings::wall_time_s}},
                 {"cpu_time", {&Resources::cpu_time, &ResourceCeilings::cpu_time_s}},
                 {"memory", {&Resources::memory, &ResourceCeilings::memory_bytes}},
                 {"pids", {&Resources::pids, &ResourceCeilings::pids}},
                 {"output", {&Resources::output, &ResourceCeilings::output_bytes}},
                 {"file_size", {&Resources::file_size, &ResourceCeilings::file_size}},
                 {"open_files", {&Resources::open_files, &ResourceCeilings::open_files}},
                 {"network_connections",
                  {&Resources::network_connections, &ResourceCeilings::network_connections}},
                 {"network_bytes", {&Resources::network_bytes, &ResourceCeilings::network_bytes}},
                 {"network_idle", {&Resources::network_idle, &ResourceCeilings::network_idle_s}},
                 {"network_rate", {&Resources::network_rate, &ResourceCeilings::network_rate}}};
  const auto fields = schema_tables()["resources"];
  EXPECT_EQ(fields.size(), members.size());
  for (const auto& f : fields) {
    auto m = members.find(f.key);
    ASSERT_NE(m, members.end()) << "no ResourceCeilings member for resources." << f.key;
    const std::string toml = "schema = 1\nresources = { " + f.key + " = " + f.default_text + " }\n";
    auto p = parse_policy_text(toml, ParseOptions{}, nullptr);
    ASSERT_TRUE(p.has_value()) << toml << (p ? "" : p.error().message());
    const auto& [written, value] = m->second;
    ASSERT_TRUE((p->resources.*written).has_value()) << f.key;
    EXPECT_EQ(*(p->resources.*written), kDefaultResources.*value)
        << "resources." << f.key << ": schema.h's comment says " << f.default_text
        << ", kDefaultResources says " << kDefaultResources.*value;
  }
}

TEST(SchemaDocs, ShippedExamplesParse) {
  for (const char* file : {"examples/policies/default.toml", "examples/policies/org.toml",
                           "examples/policies/mcp.toml"}) {
    ParseOptions o;
    o.file = file;
    auto p = parse_policy_text(read(file), o, nullptr);
    EXPECT_TRUE(p.has_value()) << (p ? "" : p.error().message());
  }
}

}  // namespace
}  // namespace moat::policy
