// policy/toml_reader.h: reading a parsed TOML file's values with errors that name
// file:line:col, the key and what is accepted; shared by policy files and batch manifests.
#pragma once

#include <toml++/toml.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace moat::policy {

using Strings = std::vector<std::string>;

// Parses `text` as TOML. The only place toml++'s exceptions are caught: a syntax error
// becomes "file:line:col: syntax: what".
Result<toml::table> parse_toml_text(std::string_view text, const std::string& file);

// "a table", "a string", ...: how an error names the type it found.
std::string toml_type_name(const toml::node& n);

// Reads one file's values. Every failure is "file:line:col: key: what".
class TomlReader {
 public:
  // Unknown keys are errors unless `unknown_keys_are_errors` is false; then they are
  // appended to `notices` (may be null) with " (ignored)".
  TomlReader(std::string file, bool unknown_keys_are_errors, std::vector<std::string>* notices)
      : file_(std::move(file)), strict_(unknown_keys_are_errors), notices_(notices) {}

  const std::string& file() const { return file_; }
  Failure error_at(const toml::source_region& src, const std::string& key,
                   const std::string& what) const;
  // Every key of `t` must be in `allowed`; `path` is t's own key ("" at the top).
  Result<void> check_keys(const toml::table& t, const Strings& allowed, const std::string& path);

  Result<std::string> string(const toml::node& n, const std::string& key);
  // A string or an array of strings; empty strings are refused.
  Result<Strings> strings(const toml::node& n, const std::string& key);
  Result<Strings> one_of(const toml::node& n, const std::string& key, const Strings& accepted);
  Result<std::int64_t> integer(const toml::node& n, const std::string& key, std::int64_t lo,
                               std::int64_t hi);
  // An integer or a float, from `lo` to `hi`.
  Result<double> number(const toml::node& n, const std::string& key, double lo, double hi);
  Result<bool> boolean(const toml::node& n, const std::string& key);
  Result<const toml::table*> table(const toml::node& n, const std::string& key);
  // t[name], which must be there; `key` is t's own.
  Result<const toml::node*> required(const toml::table& t, const char* name,
                                     const std::string& key);
  Result<Strings> required_strings(const toml::table& t, const char* name, const std::string& key);
  // Durations ("10m", 90) or sizes ("4GiB", 1024): an integer, or a string with a unit.
  Result<std::int64_t> quantity(const toml::node& n, const std::string& key, bool duration);

 private:
  std::string file_;
  bool strict_;
  std::vector<std::string>* notices_;
};

}  // namespace moat::policy
