// sessions/ids.h: identifiers shared by the session store and the audit log (timestamps are
// base/timestamps.h).
#pragma once

#include <string>

namespace moat::sessions {

// A UUIDv7 (RFC 9562): 48-bit Unix milliseconds, then random bits, so ids sort by time.
std::string uuid_v7();

// 8 lowercase hex characters from the kernel's random pool: an entry id, unique within one
// session file (the store retries on a collision), short enough to type in ID@ENTRY.
std::string short_id();

}  // namespace moat::sessions
