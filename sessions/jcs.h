// sessions/jcs.h: RFC 8785 JSON Canonicalization Scheme, the byte form audit hashes cover.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>
#include <string_view>

#include "base/result.h"

namespace moat::sessions {

// The canonical form of `value` (RFC 8785): no whitespace, object members sorted by their
// UTF-16 code units, strings with the minimal escapes, numbers as ECMAScript prints them.
// Fails on invalid UTF-8 and on NaN or infinity, which JCS cannot express.
Result<std::string> canonical_json(const nlohmann::json& value);

// An object's canonical form, and where a member it does not hold goes in it: a record hashed
// without one of its members and written with it (the audit log's "hash") is canonicalised
// once, not twice.
struct CanonicalObject {
  std::string text;  // canonical_json(object)
  std::string key;   // the member's name
  std::size_t at = 0;
  bool after_member = false;   // a member sorts before it
  bool before_member = false;  // a member sorts after it
  // canonical_json of the object with the member `key` set to `value`.
  Result<std::string> with_member(const nlohmann::json& value) const;
};
// Fails as canonical_json does, and when `object` is no object or holds `key` already.
Result<CanonicalObject> canonical_object(const nlohmann::json& object, std::string_view key);

// Whether `s` is well-formed UTF-8 (no overlong forms, surrogates or code points past
// U+10FFFF): what canonical_json accepts in a string.
bool is_utf8(std::string_view s);

// ECMAScript Number::toString of a finite double ("1e+21", "0.000001", "-5", "1.5e-7").
std::string es_number(double v);

}  // namespace moat::sessions
