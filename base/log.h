// base/log.h: printf-checked diagnostic logging, and quoted() for untrusted text.
#pragma once

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "base/utf8.h"

namespace moat {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };

// The process-wide threshold; MOAT_LOG below it is dropped. Set from MOAT_LOG=debug|info|...
inline LogLevel& log_threshold() {
  static LogLevel level = [] {
    const char* v = std::getenv("MOAT_LOG");
    if (v == nullptr) return LogLevel::kWarn;
    std::string_view s(v);
    if (s == "debug") return LogLevel::kDebug;
    if (s == "info") return LogLevel::kInfo;
    if (s == "error") return LogLevel::kError;
    return LogLevel::kWarn;
  }();
  return level;
}

__attribute__((format(printf, 4, 5))) inline void log_line(LogLevel level, const char* file,
                                                           int line, const char* fmt, ...) {
  if (level < log_threshold()) return;
  static const char* const kNames[] = {"debug", "info", "warn", "error"};
  char buf[4096];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  const char* base = file;
  for (const char* p = file; *p; ++p)
    if (*p == '/') base = p + 1;
  std::fprintf(stderr, "moat[%s] %s:%d: %s\n", kNames[static_cast<int>(level)], base, line, buf);
}

// Quotes untrusted text for a log line or an error message: wraps it in single quotes and
// escapes quotes, backslashes and control characters (like nsjail's QC()), so a file name
// cannot forge a log line or move the terminal's cursor. A byte that is not part of
// well-formed UTF-8 is written as \xNN by append_hex_escape, as a control character is: the
// same spelling as hex_escape_non_utf8 (base/utf8.h) gives it elsewhere on screen.
inline std::string quoted(std::string_view s) {
  std::string out = "'";
  while (!s.empty()) {
    const unsigned char c = static_cast<unsigned char>(s[0]);
    const std::size_t n = utf8_sequence_length(s);
    if (n > 1) {
      out += s.substr(0, n);
    } else if (n == 0 || c < 0x20 || c == 0x7f) {
      append_hex_escape(out, c);
    } else {
      if (c == '\'' || c == '\\') out += '\\';
      out += static_cast<char>(c);
    }
    s.remove_prefix(n > 1 ? n : 1);
  }
  out += "'";
  return out;
}

}  // namespace moat

#define MOAT_LOG_DEBUG(...) \
  ::moat::log_line(::moat::LogLevel::kDebug, __FILE__, __LINE__, __VA_ARGS__)
#define MOAT_LOG_INFO(...) \
  ::moat::log_line(::moat::LogLevel::kInfo, __FILE__, __LINE__, __VA_ARGS__)
#define MOAT_LOG_WARN(...) \
  ::moat::log_line(::moat::LogLevel::kWarn, __FILE__, __LINE__, __VA_ARGS__)
#define MOAT_LOG_ERROR(...) \
  ::moat::log_line(::moat::LogLevel::kError, __FILE__, __LINE__, __VA_ARGS__)
