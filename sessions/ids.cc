// sessions/ids.cc: UUIDv7, short entry ids, short forms of session ids.
#include "sessions/ids.h"

#include <algorithm>
#include <cstdint>
#include <ctime>
#include <set>

#include "base/hex.h"
#include "base/random.h"
#include "base/timestamps.h"

namespace moat::sessions {

std::string uuid_v7() {
  // An id that is not random would collide: random_bytes_or_abort stops a broken host.
  unsigned char b[16];
  random_bytes_or_abort(b, sizeof b);
  const timespec ts = now_realtime();
  const uint64_t ms =
      static_cast<uint64_t>(ts.tv_sec) * 1000 + static_cast<uint64_t>(ts.tv_nsec) / 1000000;
  for (int i = 0; i < 6; ++i) b[i] = static_cast<unsigned char>(ms >> (8 * (5 - i)));
  b[6] = static_cast<unsigned char>((b[6] & 0x0f) | 0x70);  // version 7
  b[8] = static_cast<unsigned char>((b[8] & 0x3f) | 0x80);  // variant 10
  const std::string h = hex_encode(b, sizeof b);
  return h.substr(0, 8) + "-" + h.substr(8, 4) + "-" + h.substr(12, 4) + "-" + h.substr(16, 4) +
         "-" + h.substr(20);
}

std::string short_id() { return random_hex_or_abort(4); }

std::vector<std::string> short_session_ids(const std::vector<std::string>& ids) {
  size_t longest = 0;
  for (const std::string& id : ids) longest = std::max(longest, id.size());
  for (size_t n = kShortSessionIdLength;; ++n) {
    std::vector<std::string> out;
    std::set<std::string> seen;
    for (const std::string& id : ids) {
      out.push_back(id.size() <= n ? id : id.substr(id.size() - n));
      seen.insert(out.back());
    }
    if (seen.size() == ids.size() || n >= longest) return out;
  }
}

}  // namespace moat::sessions
