// tools/schema.h: the deterministic repair of tool arguments and their validation against
// the JSON Schema subset the tool specs use (type, properties, required,
// additionalProperties, minimum, exclusiveMinimum, items, minItems, minLength).
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace moat::tools {

// Every offending field, one message each: "edits[1].oldText: expected string, got number".
std::vector<std::string> validate_against_schema(const nlohmann::json& value,
                                                 const nlohmann::json& schema);

// Shapes a rule can repair without guessing: a JSON-encoded string where the schema wants
// an array or object is parsed; a numeric string where it wants a number is converted; for
// `edit`, top-level oldText/newText fold into edits[]. Returns the repaired arguments and
// appends what was done to `notes`.
nlohmann::json repair_arguments(const std::string& tool, nlohmann::json args,
                                const nlohmann::json& schema, std::vector<std::string>* notes);

}  // namespace moat::tools
