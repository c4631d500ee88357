// base/json_field.h: one optional member of a JSON object, as a typed decoder reads it
// (agent/batch/item_result.cc, sandbox/session_description.cc): absent is nullopt, another type
// is an error naming the field, never its value.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"

namespace moat {

// "WHAT: \"FIELD\" is not TYPE", e.g. `results line: "exit" is not an integer`.
inline Error field_error(std::string_view what, const std::string& field, const char* type) {
  return Error{0, std::string(what) + ": \"" + field + "\" is not " + type};
}

// j[key] when it is there and `is` holds for it (&json::is_boolean, ...); `type` names what is.
template <typename T>
Result<std::optional<T>> optional_field(const nlohmann::json& j, const char* key,
                                        bool (nlohmann::json::*is)() const, const char* type,
                                        std::string_view what) {
  auto it = j.find(key);
  if (it == j.end()) return std::optional<T>();
  if (!((*it).*is)()) return fail(field_error(what, key, type));
  return std::optional<T>(it->get<T>());
}

}  // namespace moat
