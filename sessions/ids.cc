// sessions/ids.cc: UUIDv7, short entry ids, RFC 3339 timestamps.
#include "sessions/ids.h"

#include <sys/random.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <ctime>

#include "base/check.h"

namespace moat::sessions {
namespace {

void random_bytes(unsigned char* out, size_t n) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = ::getrandom(out + got, n - got, 0);
    if (r < 0 && errno == EINTR) continue;
    // getrandom only fails before the pool is initialised at early boot, or on a bad
    // buffer; either is a broken host, and an id that is not random would collide.
    MOAT_CHECK(r > 0);
    got += static_cast<size_t>(r);
  }
}

std::string format_utc(const timespec& ts, int fraction_digits) {
  tm parts{};
  gmtime_r(&ts.tv_sec, &parts);
  char head[32];
  std::strftime(head, sizeof head, "%Y-%m-%dT%H:%M:%S", &parts);
  long frac = ts.tv_nsec;
  for (int i = 9; i > fraction_digits; --i) frac /= 10;
  char out[64];
  std::snprintf(out, sizeof out, "%s.%0*ldZ", head, fraction_digits, frac);
  return out;
}

timespec now() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return ts;
}

}  // namespace

std::string uuid_v7() {
  unsigned char b[16];
  random_bytes(b, sizeof b);
  const timespec ts = now();
  const uint64_t ms = static_cast<uint64_t>(ts.tv_sec) * 1000 + static_cast<uint64_t>(ts.tv_nsec) / 1000000;
  for (int i = 0; i < 6; ++i) b[i] = static_cast<unsigned char>(ms >> (8 * (5 - i)));
  b[6] = static_cast<unsigned char>((b[6] & 0x0f) | 0x70);  // version 7
  b[8] = static_cast<unsigned char>((b[8] & 0x3f) | 0x80);  // variant 10
  char out[37];
  std::snprintf(out, sizeof out,
                "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
                b[14], b[15]);
  return out;
}

std::string short_id() {
  unsigned char b[4];
  random_bytes(b, sizeof b);
  char out[9];
  std::snprintf(out, sizeof out, "%02x%02x%02x%02x", b[0], b[1], b[2], b[3]);
  return out;
}

std::string now_rfc3339_ns() { return format_utc(now(), 9); }
std::string now_rfc3339_ms() { return format_utc(now(), 3); }

}  // namespace moat::sessions
