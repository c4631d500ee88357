// sessions/ids.h: identifiers shared by the session store and the audit log (timestamps are
// base/timestamps.h).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace moat::sessions {

// A UUIDv7 (RFC 9562): 48-bit Unix milliseconds, then random bits, so ids sort by time.
std::string uuid_v7();

// 8 lowercase hex characters from the kernel's random pool: an entry id, unique within one
// session file (the store retries on a collision), short enough to type in ID@ENTRY.
std::string short_id();

// A session's short form: its random tail, the last kShortSessionIdLength characters. A UUIDv7
// starts with its time, so sessions made within the same minute share their first 8+
// characters and a prefix that short names none of them; the tail is random. `moat sessions
// list` prints it; every command that takes a session id accepts it (or any prefix of the id).
inline constexpr size_t kShortSessionIdLength = 8;
// The short forms of `ids`, in order: each id's tail, longer for all when two tails would be
// the same (so each printed form names one of `ids`).
std::vector<std::string> short_session_ids(const std::vector<std::string>& ids);

}  // namespace moat::sessions
