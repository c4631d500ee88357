// sessions/simd_errors.h: simdjson's text for one of its error codes.
#pragma once

#include <simdjson.h>

namespace moat::sessions {

// simdjson::error_message(err). In a file of its own (simd_errors.cc) so that a binary that opens
// libsimdjson on first use defines it instead (agent/simdjson_loader.cc): the inline original
// reads the library's table of messages, which would make the library needed at every start.
const char* simd_error_message(simdjson::error_code err);

}  // namespace moat::sessions
