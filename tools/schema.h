// tools/schema.h: the deterministic repair of tool arguments and their validation against
// the JSON Schema subset the tool specs use (type, properties, required,
// additionalProperties, minimum, exclusiveMinimum, items, minItems, minLength).
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace moat::tools {

// Every offending field, one message each: "edits[1].oldText: expected string, got number".
std::vector<std::string> validate_against_schema(const nlohmann::json& value,
                                                 const nlohmann::json& schema);

// Shapes a rule can repair without guessing, for any tool: a JSON-encoded string where the
// schema wants an array or object is parsed; a numeric string where it wants a number is
// converted. Returns the repaired arguments and appends what was done to `notes`. A tool's
// own repair (its row's `repair`) runs after this one.
nlohmann::json repair_to_schema(nlohmann::json args, const nlohmann::json& schema,
                                std::vector<std::string>* notes);

// The first string argument holding a NUL byte ("path", "edits[0].oldText"), file content
// excepted; nullopt when there is none. A path, a command or a pattern ends at its first NUL
// in the kernel and in argv, so `server.pem\0` would be judged as one name and opened as
// another: moatd refuses such a call before the policy sees it. File content (write's
// content, edit's oldText and newText) is bytes and may hold any of them.
std::optional<std::string> field_with_nul(const nlohmann::json& args);

// The pieces every tool's parameters are written with, so a shape has one spelling:
// an object that takes only `properties` (and needs `required`), and one typed property with
// its bounds ({"minLength", 1}, {"minimum", 0}, ...) and description.
nlohmann::json object_schema(nlohmann::json properties, std::vector<std::string> required = {});
nlohmann::json property(const char* type, std::string description,
                        nlohmann::json bounds = nlohmann::json::object());
// The `limit` property of a listing tool: "Maximum number of <noun> (default N)", at least 1.
nlohmann::json limit_property(const std::string& noun, std::size_t default_limit);

}  // namespace moat::tools
