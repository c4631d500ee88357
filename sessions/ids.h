// sessions/ids.h: identifiers and timestamps shared by the session store and the audit log.
#pragma once

#include <string>

namespace moat::sessions {

// A UUIDv7 (RFC 9562): 48-bit Unix milliseconds, then random bits, so ids sort by time.
std::string uuid_v7();

// 8 lowercase hex characters from the kernel's random pool: an entry id, unique within one
// session file (the store retries on a collision), short enough to type in ID@ENTRY.
std::string short_id();

// The current time as RFC 3339 UTC with nanoseconds: "2026-03-04T10:15:02.118233140Z".
std::string now_rfc3339_ns();

// The current time as RFC 3339 UTC with milliseconds, for session entries and file names.
std::string now_rfc3339_ms();

}  // namespace moat::sessions
