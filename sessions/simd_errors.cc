// sessions/simd_errors.cc: simdjson's text for an error code (simd_errors.h), for the binaries that
// link libsimdjson.
#include "sessions/simd_errors.h"

namespace moat::sessions {

const char* simd_error_message(simdjson::error_code err) { return simdjson::error_message(err); }

}  // namespace moat::sessions
