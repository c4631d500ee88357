// base/timestamps.h: wall-clock times as RFC 3339 UTC text ("2026-03-04T10:15:02.118233140Z"),
// the one formatter behind session entries, audit records and file names.
#pragma once

#include <chrono>
#include <cstdio>
#include <ctime>
#include <string>

namespace moat {

// ts as "YYYY-MM-DDTHH:MM:SS.<fraction>Z" with fraction_digits (1 to 9) digits, truncated.
inline std::string format_utc(const timespec& ts, int fraction_digits) {
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

inline timespec to_timespec(std::chrono::system_clock::time_point t) {
  const auto ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  timespec ts{};
  ts.tv_sec = static_cast<time_t>(ns / 1000000000);
  ts.tv_nsec = static_cast<long>(ns % 1000000000);
  return ts;
}

// t with nanoseconds: "2026-03-04T10:15:02.118233140Z".
inline std::string rfc3339_ns(std::chrono::system_clock::time_point t) {
  return format_utc(to_timespec(t), 9);
}

inline timespec now_realtime() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return ts;
}

// The current time with nanoseconds (audit records) or milliseconds (session entries).
inline std::string now_rfc3339_ns() { return format_utc(now_realtime(), 9); }
inline std::string now_rfc3339_ms() { return format_utc(now_realtime(), 3); }

// Today's UTC date, "2026-03-04": the audit log's per-day directory.
inline std::string utc_date(time_t t = std::time(nullptr)) {
  tm parts{};
  gmtime_r(&t, &parts);
  char buf[16];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", &parts);
  return buf;
}

}  // namespace moat
