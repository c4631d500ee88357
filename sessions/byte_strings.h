// sessions/byte_strings.h: host byte strings that are not UTF-8 in audit records.
//
// Commands, argv words, paths and the workspace are bytes on the host, and JSON (RFC 8785
// in particular) holds only UTF-8 text. A string value that is not valid UTF-8 is written
// as the object {"bytes": "<standard base64 of its exact bytes>"}, ripgrep's --json
// convention: lossless, and never mistaken for text, since a text value stays a string.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "base/byte_strings.h"

namespace moat::sessions {

// `value` with every string value (at any depth) that is not valid UTF-8 replaced by
// {"bytes": base64}; moatd's channels to the sandbox use the same form (base/byte_strings.h).
using moat::encode_byte_strings;

// What a person reads for a value that holds text: a string as it is; {"bytes": base64}
// decoded, with each byte that is not part of valid UTF-8 written as \xNN; "" otherwise.
std::string display_text(const nlohmann::json& value);

}  // namespace moat::sessions
