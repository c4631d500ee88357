// base/sse.cc: WHATWG event-stream framing (lines, fields, dispatch).
#include "base/sse.h"

#include <cstdint>

namespace moat {

namespace {

constexpr std::string_view kBom = "\xEF\xBB\xBF";
constexpr std::string_view kReplacement = "\xEF\xBF\xBD";

// Length of the valid UTF-8 sequence at s[i], or 0 if it is not one (RFC 3629: no
// overlongs, no surrogates, nothing above U+10FFFF).
size_t utf8_sequence_length(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
  const uint8_t c = b(i);
  if (c < 0x80) return 1;
  size_t n = 0;
  uint8_t lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  if (b(i + 1) < lo || b(i + 1) > hi) return 0;
  for (size_t k = 2; k < n; ++k)
    if ((b(i + k) & 0xC0) != 0x80) return 0;
  return n;
}

}  // namespace

std::string sanitize_utf8(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (size_t i = 0; i < bytes.size();) {
    const size_t n = utf8_sequence_length(bytes, i);
    if (n == 0) {
      out += kReplacement;
      ++i;
    } else {
      out.append(bytes.substr(i, n));
      i += n;
    }
  }
  return out;
}

void SseParser::feed(std::string_view bytes) {
  for (size_t i = 0; i < bytes.size(); ++i) {
    const char c = bytes[i];
    // CRLF, LF and CR each end a line; a CR at the end of one feed may be followed by the
    // LF of the same line ending in the next feed, so remember it instead of peeking.
    if (after_cr_) {
      after_cr_ = false;
      if (c == '\n') continue;
    }
    if (c == '\r' || c == '\n') {
      after_cr_ = (c == '\r');
      process_line(line_);
      line_.clear();
      continue;
    }
    // Copy runs of ordinary bytes at once: one event can be tens of kilobytes.
    size_t j = i;
    while (j < bytes.size() && bytes[j] != '\r' && bytes[j] != '\n') ++j;
    line_.append(bytes.substr(i, j - i));
    i = j - 1;
  }
}

void SseParser::finish() {
  if (!line_.empty()) {
    process_line(line_);
    line_.clear();
  }
  dispatch();
}

void SseParser::process_line(std::string_view raw) {
  if (at_stream_start_) {
    at_stream_start_ = false;
    if (raw.substr(0, kBom.size()) == kBom) raw.remove_prefix(kBom.size());
  }
  // Decoding happens per complete line, so a UTF-8 character split across feeds is whole.
  const std::string line = sanitize_utf8(raw);
  if (line.empty()) {
    dispatch();
    return;
  }
  if (line[0] == ':') {
    ++comment_lines_;
    return;
  }
  const size_t colon = line.find(':');
  std::string_view field = line, value;
  if (colon != std::string::npos) {
    field = std::string_view(line).substr(0, colon);
    value = std::string_view(line).substr(colon + 1);
    if (!value.empty() && value[0] == ' ') value.remove_prefix(1);
  }
  if (field == "event") {
    event_type_ = value;
  } else if (field == "data") {
    data_.append(value);
    data_ += '\n';
    has_data_ = true;
  } else if (field == "id") {
    if (value.find('\0') == std::string_view::npos) last_id_ = value;
  } else if (field == "retry") {
    if (!value.empty() && value.find_first_not_of("0123456789") == std::string_view::npos &&
        value.size() < 10)
      retry_ms_ = std::stol(std::string(value));
  }
  // Any other field is ignored, as the spec requires.
}

void SseParser::dispatch() {
  if (!has_data_) {
    // A blank line with no data resets the event type and dispatches nothing.
    event_type_.clear();
    return;
  }
  SseEvent ev;
  ev.type = event_type_.empty() ? "message" : event_type_;
  ev.data = std::move(data_);
  ev.data.pop_back();  // the spec removes the last '\n' appended after each data line
  ev.id = last_id_;
  data_.clear();
  has_data_ = false;
  event_type_.clear();
  ++events_;
  sink_(ev);
}

}  // namespace moat
