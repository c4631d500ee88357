// sessions/ids.cc: UUIDv7, short entry ids, RFC 3339 timestamps.
#include "sessions/ids.h"

#include <cstdint>
#include <ctime>

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

}  // namespace moat::sessions
