// policy/toml_reader.cc: TOML values read with errors that name file:line:col. The only file
// that catches toml++'s exceptions.
#include "policy/toml_reader.h"

#include <algorithm>

#include "policy/quantity.h"

namespace moat::policy {

Result<toml::table> parse_toml_text(std::string_view text, const std::string& file) {
  try {
    return toml::parse(text, file);
  } catch (const toml::parse_error& e) {
    const auto& b = e.source().begin;
    return fail(file + ":" + std::to_string(b.line) + ":" + std::to_string(b.column) +
                ": syntax: " + std::string(e.description()));
  } catch (const std::exception& e) {
    // toml++ may also throw std::bad_alloc etc.; none may leave this file.
    return fail(file + ":1:1: syntax: " + e.what());
  }
}

std::string toml_type_name(const toml::node& n) {
  switch (n.type()) {
    case toml::node_type::table: return "a table";
    case toml::node_type::array: return "an array";
    case toml::node_type::string: return "a string";
    case toml::node_type::integer: return "an integer";
    case toml::node_type::floating_point: return "a float";
    case toml::node_type::boolean: return "a boolean";
    default: return "a date/time";
  }
}

Failure TomlReader::error_at(const toml::source_region& src, const std::string& key,
                             const std::string& what) const {
  return fail(file_ + ":" + std::to_string(src.begin.line) + ":" +
              std::to_string(src.begin.column) + ": " + key + ": " + what);
}

Result<void> TomlReader::check_keys(const toml::table& t, const Strings& allowed,
                                    const std::string& path) {
  for (auto&& [k, v] : t) {
    if (std::find(allowed.begin(), allowed.end(), k.str()) != allowed.end()) continue;
    std::string accepted;
    for (const auto& a : allowed) accepted += (accepted.empty() ? "" : ", ") + a;
    const std::string key = path.empty() ? std::string(k.str()) : path + "." + std::string(k.str());
    auto err = error_at(k.source(), key, "unknown key; accepted keys here: " + accepted);
    if (strict_) return err;
    if (notices_ != nullptr) notices_->push_back(err.error.context + " (ignored)");
  }
  return {};
}

Result<std::string> TomlReader::string(const toml::node& n, const std::string& key) {
  if (const auto* s = n.as_string()) return std::string(s->get());
  return error_at(n.source(), key, "expected a string, got " + toml_type_name(n));
}

Result<Strings> TomlReader::strings(const toml::node& n, const std::string& key) {
  Strings out;
  if (const auto* s = n.as_string()) {
    out.push_back(std::string(s->get()));
  } else if (const auto* a = n.as_array()) {
    for (const auto& e : *a) {
      const auto* s2 = e.as_string();
      if (s2 == nullptr)
        return error_at(e.source(), key,
                        "expected a string or an array of strings, found " + toml_type_name(e));
      out.push_back(std::string(s2->get()));
    }
  } else {
    return error_at(n.source(), key,
                    "expected a string or an array of strings, got " + toml_type_name(n));
  }
  for (const auto& s : out)
    if (s.empty()) return error_at(n.source(), key, "empty strings are not accepted");
  return out;
}

Result<Strings> TomlReader::one_of(const toml::node& n, const std::string& key,
                                   const Strings& accepted) {
  MOAT_ASSIGN_OR_RETURN(Strings values, strings(n, key));
  for (const auto& v : values) {
    if (std::find(accepted.begin(), accepted.end(), v) != accepted.end()) continue;
    std::string list;
    for (const auto& a : accepted) list += (list.empty() ? "\"" : ", \"") + a + "\"";
    return error_at(n.source(), key, "expected any of " + list + ", got \"" + v + "\"");
  }
  return values;
}

Result<std::int64_t> TomlReader::integer(const toml::node& n, const std::string& key,
                                         std::int64_t lo, std::int64_t hi) {
  const auto* i = n.as_integer();
  if (i == nullptr)
    return error_at(n.source(), key, "expected an integer, got " + toml_type_name(n));
  if (i->get() < lo || i->get() > hi)
    return error_at(n.source(), key,
                    "expected an integer from " + std::to_string(lo) + " to " + std::to_string(hi) +
                        ", got " + std::to_string(i->get()));
  return i->get();
}

Result<double> TomlReader::number(const toml::node& n, const std::string& key, double lo,
                                  double hi) {
  double v = 0;
  if (const auto* i = n.as_integer()) v = static_cast<double>(i->get());
  else if (const auto* f = n.as_floating_point()) v = f->get();
  else return error_at(n.source(), key, "expected a number, got " + toml_type_name(n));
  if (!(v >= lo && v <= hi))
    return error_at(n.source(), key,
                    "expected a number from " + std::to_string(lo) + " to " + std::to_string(hi) +
                        ", got " + std::to_string(v));
  return v;
}

Result<bool> TomlReader::boolean(const toml::node& n, const std::string& key) {
  if (const auto* b = n.as_boolean()) return b->get();
  return error_at(n.source(), key, "expected true or false, got " + toml_type_name(n));
}

Result<const toml::table*> TomlReader::table(const toml::node& n, const std::string& key) {
  if (const auto* t = n.as_table()) return t;
  return error_at(n.source(), key, "expected a table, got " + toml_type_name(n));
}

Result<const toml::node*> TomlReader::required(const toml::table& t, const char* name,
                                               const std::string& key) {
  if (const auto* n = t.get(name)) return n;
  return error_at(t.source(), key + "." + name, "required key is missing");
}

Result<Strings> TomlReader::required_strings(const toml::table& t, const char* name,
                                             const std::string& key) {
  MOAT_ASSIGN_OR_RETURN(const toml::node* n, required(t, name, key));
  return strings(*n, key + "." + name);
}

Result<std::int64_t> TomlReader::quantity(const toml::node& n, const std::string& key,
                                          bool duration) {
  if (const auto* i = n.as_integer()) {
    if (i->get() <= 0)
      return error_at(n.source(), key,
                      "expected a positive value, got " + std::to_string(i->get()));
    return i->get();
  }
  const char* accepted = duration ? "a duration (90, \"30s\", \"10m\", \"1h\")"
                                  : "a size (1024, \"512KiB\", \"16MiB\", \"4GiB\")";
  const auto* s = n.as_string();
  if (s == nullptr) return error_at(n.source(), key, std::string("expected ") + accepted);
  auto v = duration ? parse_duration_seconds(s->get()) : parse_size_bytes(s->get());
  if (!v)
    return error_at(
        n.source(), key,
        std::string("expected ") + accepted + ", got \"" + std::string(s->get()) + "\"");
  return *v;
}

}  // namespace moat::policy
