// tests/integration/e2e/events_schema.h: docs/events.md read as the schema it states: per
// section, a table per event (or command) type, each row a field with its types and presence.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "e2e_support.h"

namespace moat::e2e {

struct Field {
  std::set<std::string> types;  // "string", "integer", "number", "boolean", "object", ...
  bool always = false;
};
using EventSchema = std::map<std::string, Field>;

struct Schema {
  int version = -1;
  std::map<std::string, EventSchema> events;
};

inline std::string between(const std::string& s, char open, char close, std::size_t from = 0) {
  const auto a = s.find(open, from);
  const auto b = a == std::string::npos ? a : s.find(close, a + 1);
  return b == std::string::npos ? "" : s.substr(a + 1, b - a - 1);
}

inline std::vector<std::string> cells(const std::string& row) {
  std::vector<std::string> out;
  std::stringstream ss(row.substr(1));
  for (std::string c; std::getline(ss, c, '|');) {
    const auto a = c.find_first_not_of(' '), b = c.find_last_not_of(' ');
    out.push_back(a == std::string::npos ? "" : c.substr(a, b - a + 1));
  }
  return out;
}

// The tables of the "## " sections whose heading holds `section`: "### `name`" starts a
// type's table (an empty table when it has no rows); "| `field` | string or null | always |
// ... |" rows.
inline Schema read_schema(const std::string& section) {
  std::ifstream in(source_root() + "/docs/events.md");
  Schema schema;
  std::string line, current;
  bool in_section = false;
  while (std::getline(in, line)) {
    if (line.rfind("## ", 0) == 0) {
      in_section = line.find(section) != std::string::npos;
      current.clear();
    }
    if (!in_section) continue;
    if (const auto v = line.find("schema: **"); v != std::string::npos)
      schema.version = std::atoi(line.c_str() + v + 10);
    if (line.rfind("### ", 0) == 0) {
      current = between(line, '`', '`');
      schema.events[current];
    }
    if (current.empty() || line.rfind("| `", 0) != 0) continue;
    const auto c = cells(line);
    if (c.size() < 3) continue;
    Field f;
    std::stringstream types(c[1]);
    for (std::string t; types >> t;)
      if (t != "or") f.types.insert(t);
    f.always = c[2] == "always";
    schema.events[current][between(c[0], '`', '`')] = f;
  }
  return schema;
}

inline bool has_type(const nlohmann::json& v, const std::string& t) {
  if (t == "string") return v.is_string();
  if (t == "integer") return v.is_number_integer();
  if (t == "number") return v.is_number();
  if (t == "boolean") return v.is_boolean();
  if (t == "object") return v.is_object();
  if (t == "array") return v.is_array();
  if (t == "null") return v.is_null();
  return false;
}

// "" when `fields` (all but `type`) are as `table` documents them, else what is wrong.
inline std::string table_problem(const std::string& type, const EventSchema& table,
                                 const nlohmann::json& e) {
  for (const auto& [key, value] : e.items()) {
    if (key == "type") continue;
    auto f = table.find(key);
    if (f == table.end()) return type + ": undocumented field " + key;
    bool ok = false;
    for (const auto& t : f->second.types) ok = ok || has_type(value, t);
    if (!ok) return type + "." + key + ": " + value.dump() + " is not of a documented type";
  }
  for (const auto& [key, f] : table)
    if (f.always && !e.contains(key)) return type + ": missing " + key;
  return "";
}

// "" when `e` is an event as the schema documents it, else what is wrong.
inline std::string schema_problem(const Schema& s, const nlohmann::json& e) {
  if (!e.is_object() || !e.contains("type") || !e["type"].is_string()) return "no type";
  const std::string type = e["type"];
  auto it = s.events.find(type);
  if (it == s.events.end()) return "undocumented event type " + type;
  return table_problem(type, it->second, e);
}

}  // namespace moat::e2e
