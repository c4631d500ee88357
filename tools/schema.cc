// tools/schema.cc: validation and repair. nlohmann::json::parse throws; it is wrapped here
// (parse with allow_exceptions = false) so nothing throws out of this file.
#include "tools/schema.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iterator>
#include <string_view>

namespace moat::tools {
namespace {

std::string type_of(const nlohmann::json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "boolean";
  if (v.is_number_integer() || v.is_number_unsigned()) return "integer";
  if (v.is_number()) return "number";
  if (v.is_string()) return "string";
  if (v.is_array()) return "array";
  return "object";
}

bool has_type(const nlohmann::json& v, const std::string& type) {
  if (type == "number") return v.is_number();
  if (type == "integer") {
    if (v.is_number_integer() || v.is_number_unsigned()) return true;
    // 3.0 is an integer in JSON Schema's sense.
    return v.is_number_float() && std::floor(v.get<double>()) == v.get<double>();
  }
  return type_of(v) == type;
}

void validate(const nlohmann::json& v, const nlohmann::json& schema, const std::string& where,
              std::vector<std::string>* errors) {
  const std::string name = where.empty() ? "arguments" : where;
  if (schema.contains("type")) {
    const std::string type = schema["type"];
    if (!has_type(v, type)) {
      errors->push_back(name + ": expected " + type + ", got " + type_of(v));
      return;
    }
  }
  if (v.is_number()) {
    const double d = v.get<double>();
    if (schema.contains("minimum") && d < schema["minimum"].get<double>())
      errors->push_back(name + ": must be >= " + schema["minimum"].dump());
    if (schema.contains("exclusiveMinimum") && d <= schema["exclusiveMinimum"].get<double>())
      errors->push_back(name + ": must be > " + schema["exclusiveMinimum"].dump());
  }
  if (v.is_string() && schema.contains("minLength") &&
      v.get_ref<const std::string&>().size() < schema["minLength"].get<std::size_t>())
    errors->push_back(name + ": must not be empty");
  if (v.is_array()) {
    if (schema.contains("minItems") && v.size() < schema["minItems"].get<std::size_t>())
      errors->push_back(name + ": needs at least " + schema["minItems"].dump() + " item(s)");
    if (schema.contains("items"))
      for (std::size_t i = 0; i < v.size(); ++i)
        validate(v[i], schema["items"], name + "[" + std::to_string(i) + "]", errors);
  }
  if (!v.is_object()) return;
  const std::string prefix = where.empty() ? "" : where + ".";
  const auto props = schema.value("properties", nlohmann::json::object());
  for (const auto& req : schema.value("required", nlohmann::json::array()))
    if (!v.contains(req.get<std::string>()))
      errors->push_back(prefix + req.get<std::string>() + ": required field is missing");
  for (const auto& [key, value] : v.items()) {
    if (props.contains(key)) {
      validate(value, props[key], prefix + key, errors);
    } else if (schema.contains("additionalProperties") && schema["additionalProperties"] == false) {
      errors->push_back(prefix + key + ": unknown field (allowed: " + [&] {
        std::string names;
        for (const auto& [k, _] : props.items()) names += (names.empty() ? "" : ", ") + k;
        return names;
      }() + ")");
    }
  }
}

// A numeric string ("20", "1.5") as a number; nullopt when it is anything else.
std::optional<nlohmann::json> parse_number(const std::string& s, bool integer) {
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  if (integer) {
    const long long n = std::strtoll(s.c_str(), &end, 10);
    if (*end != '\0') return std::nullopt;
    return nlohmann::json(n);
  }
  const double d = std::strtod(s.c_str(), &end);
  if (*end != '\0' || !std::isfinite(d)) return std::nullopt;
  return nlohmann::json(d);
}

void repair_value(nlohmann::json& v, const nlohmann::json& schema, const std::string& where,
                  std::vector<std::string>* notes) {
  const std::string type = schema.value("type", "");
  if (v.is_string() && (type == "array" || type == "object")) {
    auto parsed = nlohmann::json::parse(v.get<std::string>(), nullptr, /*allow_exceptions=*/false);
    if (!parsed.is_discarded() && type_of(parsed) == type) {
      v = std::move(parsed);
      notes->push_back(where + ": parsed a JSON string into an " + type);
    }
  } else if (v.is_string() && (type == "integer" || type == "number")) {
    if (auto n = parse_number(v.get<std::string>(), type == "integer")) {
      v = std::move(*n);
      notes->push_back(where + ": converted a numeric string to a number");
    }
  }
  if (v.is_array() && schema.contains("items"))
    for (std::size_t i = 0; i < v.size(); ++i)
      repair_value(v[i], schema["items"], where + "[" + std::to_string(i) + "]", notes);
  if (v.is_object() && schema.contains("properties"))
    for (auto& [key, sub] : schema["properties"].items())
      if (v.contains(key))
        repair_value(v[key], sub, where.empty() ? key : where + "." + key, notes);
}

// Arguments that are a file's content, not a name the kernel or argv will cut at NUL.
constexpr std::string_view kContentFields[] = {"content", "oldText", "newText"};

bool is_content_field(std::string_view key) {
  return std::find(std::begin(kContentFields), std::end(kContentFields), key) !=
         std::end(kContentFields);
}

std::optional<std::string> nul_in(const nlohmann::json& v, const std::string& where) {
  if (v.is_string())
    return v.get_ref<const std::string&>().find('\0') == std::string::npos ? std::nullopt
                                                                           : std::optional(where);
  if (v.is_array())
    for (std::size_t i = 0; i < v.size(); ++i)
      if (auto f = nul_in(v[i], where + "[" + std::to_string(i) + "]")) return f;
  if (v.is_object())
    for (const auto& [key, value] : v.items())
      if (!is_content_field(key))
        if (auto f = nul_in(value, where.empty() ? key : where + "." + key)) return f;
  return std::nullopt;
}

}  // namespace

std::optional<std::string> field_with_nul(const nlohmann::json& args) { return nul_in(args, ""); }

std::vector<std::string> validate_against_schema(const nlohmann::json& value,
                                                 const nlohmann::json& schema) {
  std::vector<std::string> errors;
  validate(value, schema, "", &errors);
  return errors;
}

nlohmann::json repair_to_schema(nlohmann::json args, const nlohmann::json& schema,
                                std::vector<std::string>* notes) {
  if (args.is_string()) {
    auto parsed = nlohmann::json::parse(args.get<std::string>(), nullptr, false);
    if (!parsed.is_discarded() && parsed.is_object()) {
      args = std::move(parsed);
      notes->push_back("arguments: parsed a JSON string into an object");
    }
  }
  if (args.is_null()) args = nlohmann::json::object();
  if (!args.is_object()) return args;
  repair_value(args, schema, "", notes);
  return args;
}

nlohmann::json object_schema(nlohmann::json properties, std::vector<std::string> required) {
  nlohmann::json s = {
      {"type", "object"}, {"properties", std::move(properties)}, {"additionalProperties", false}};
  if (!required.empty()) s["required"] = std::move(required);
  return s;
}

nlohmann::json property(const char* type, std::string description, nlohmann::json bounds) {
  bounds["type"] = type;
  bounds["description"] = std::move(description);
  return bounds;
}

nlohmann::json limit_property(const std::string& noun, std::size_t default_limit) {
  return property("integer",
                  "Maximum number of " + noun + " (default " + std::to_string(default_limit) + ")",
                  {{"minimum", 1}});
}

}  // namespace moat::tools
