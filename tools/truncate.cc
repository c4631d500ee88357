// tools/truncate.cc: head and tail truncation by whole lines, UTF-8 safe.
#include "tools/truncate.h"

#include <cstdint>
#include <cstdio>
#include <vector>

namespace moat::tools {
namespace {

// Lines as views, without their '\n'. A final '\n' does not start another line.
std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t nl = text.find('\n', start);
    if (nl == std::string_view::npos) {
      lines.push_back(text.substr(start));
      break;
    }
    lines.push_back(text.substr(start, nl - start));
    start = nl + 1;
  }
  return lines;
}

bool is_continuation(unsigned char c) { return (c & 0xC0) == 0x80; }

// Length of the valid UTF-8 sequence at s[i], or 0 when it is invalid.
std::size_t utf8_sequence_length(std::string_view s, std::size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  std::size_t len = 0;
  std::uint32_t cp = 0;
  if (c < 0x80) return 1;
  if ((c & 0xE0) == 0xC0) {
    len = 2;
    cp = c & 0x1F;
  } else if ((c & 0xF0) == 0xE0) {
    len = 3;
    cp = c & 0x0F;
  } else if ((c & 0xF8) == 0xF0) {
    len = 4;
    cp = c & 0x07;
  } else return 0;
  if (i + len > s.size()) return 0;
  for (std::size_t k = 1; k < len; ++k) {
    const auto cc = static_cast<unsigned char>(s[i + k]);
    if (!is_continuation(cc)) return 0;
    cp = (cp << 6) | (cc & 0x3F);
  }
  // Overlong forms, surrogates and values past U+10FFFF are invalid (RFC 3629 section 3).
  static constexpr std::uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return len;
}

// Fills the totals; when the text fits both limits, it is the whole result (true).
// Otherwise marks it truncated (by lines until a byte limit says otherwise).
bool fits_whole(std::string_view text, std::size_t line_count, std::size_t max_lines,
                std::size_t max_bytes, Truncation& t) {
  t.total_lines = line_count;
  t.total_bytes = text.size();
  if (line_count <= max_lines && text.size() <= max_bytes) {
    t.text = std::string(text);
    t.output_lines = line_count;
    return true;
  }
  t.truncated = true;
  t.truncated_by = "lines";
  return false;
}

// How many whole lines fit both limits, counted from the first line (head) or from the last
// (tail); a stop at the byte limit is marked in `t`.
std::size_t whole_lines_that_fit(const std::vector<std::string_view>& lines, bool from_end,
                                 std::size_t max_lines, std::size_t max_bytes, Truncation& t) {
  std::size_t bytes = 0;
  std::size_t kept = 0;
  for (; kept < lines.size() && kept < max_lines; ++kept) {
    const std::string_view line = lines[from_end ? lines.size() - 1 - kept : kept];
    const std::size_t add = line.size() + (kept > 0 ? 1 : 0);
    if (bytes + add > max_bytes) {
      t.truncated_by = "bytes";
      break;
    }
    bytes += add;
  }
  return kept;
}

// Splits `text` into `lines` and counts the whole lines kept from the head or the tail into
// t.output_lines; true when everything fits (t.text is then the whole text).
bool measure(std::string_view text, bool from_end, std::size_t max_lines, std::size_t max_bytes,
             std::vector<std::string_view>& lines, Truncation& t) {
  lines = split_lines(text);
  if (fits_whole(text, lines.size(), max_lines, max_bytes, t)) return true;
  t.output_lines = whole_lines_that_fit(lines, from_end, max_lines, max_bytes, t);
  return false;
}

}  // namespace

std::size_t count_lines(std::string_view text) { return split_lines(text).size(); }

Truncation truncate_head(std::string_view text, std::size_t max_lines, std::size_t max_bytes) {
  std::vector<std::string_view> lines;
  Truncation t;
  if (measure(text, /*from_end=*/false, max_lines, max_bytes, lines, t)) return t;
  const std::size_t kept = t.output_lines;
  t.first_line_exceeds_limit = kept == 0 && !lines.empty();
  if (kept > 0) {
    const char* end = lines[kept - 1].data() + lines[kept - 1].size();
    t.text.assign(text.data(), end);
  }
  return t;
}

Truncation truncate_tail(std::string_view text, std::size_t max_lines, std::size_t max_bytes) {
  std::vector<std::string_view> lines;
  Truncation t;
  if (measure(text, /*from_end=*/true, max_lines, max_bytes, lines, t)) return t;
  const std::size_t kept = t.output_lines;
  if (kept == 0 && !lines.empty()) {
    // Keep the tail of the last line, starting on a UTF-8 lead byte.
    std::string_view last = lines.back();
    std::size_t from = last.size() - max_bytes;
    while (from < last.size() && is_continuation(static_cast<unsigned char>(last[from]))) ++from;
    t.text = std::string(last.substr(from));
    t.last_line_partial = true;
    return t;
  }
  if (kept > 0) {
    const char* begin = lines[lines.size() - kept].data();
    const char* end = lines.back().data() + lines.back().size();
    t.text.assign(begin, end);
  }
  return t;
}

std::string truncate_line(std::string_view line, std::size_t max_chars) {
  std::size_t i = 0;
  std::size_t chars = 0;
  while (i < line.size() && chars < max_chars) {
    const std::size_t len = utf8_sequence_length(line, i);
    i += len == 0 ? 1 : len;
    ++chars;
  }
  if (i >= line.size()) return std::string(line);
  return std::string(line.substr(0, i)) + "... [truncated]";
}

std::string format_size(std::size_t bytes) {
  char buf[32];
  if (bytes < 1024) {
    std::snprintf(buf, sizeof buf, "%zu B", bytes);
  } else if (bytes < 1024 * 1024) {
    const double kb = static_cast<double>(bytes) / 1024.0;
    if (bytes % 1024 == 0) std::snprintf(buf, sizeof buf, "%zu KB", bytes / 1024);
    else std::snprintf(buf, sizeof buf, "%.1f KB", kb);
  } else {
    const double mb = static_cast<double>(bytes) / (1024.0 * 1024.0);
    if (bytes % (1024 * 1024) == 0) std::snprintf(buf, sizeof buf, "%zu MB", bytes >> 20);
    else std::snprintf(buf, sizeof buf, "%.1f MB", mb);
  }
  return buf;
}

std::string append_notices(std::string text, const std::vector<std::string>& notices) {
  if (notices.empty()) return text;
  if (!text.empty() && text.back() == '\n') text.pop_back();
  text += "\n\n[";
  for (std::size_t i = 0; i < notices.size(); ++i) text += (i ? ". " : "") + notices[i];
  return text + "]";
}

std::string sanitize_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  std::size_t i = 0;
  while (i < s.size()) {
    const std::size_t len = utf8_sequence_length(s, i);
    if (len == 0) {
      out += "\xEF\xBF\xBD";  // U+FFFD REPLACEMENT CHARACTER
      ++i;
    } else {
      out.append(s.data() + i, len);
      i += len;
    }
  }
  return out;
}

std::string limit_reached(std::size_t limit, std::string_view noun, std::string_view more) {
  return std::to_string(limit) + " " + std::string(noun) +
         " limit reached. Use limit=" + std::to_string(limit * 2) + " for more" + std::string(more);
}

CappedList cap_list(std::vector<std::string> entries, std::size_t limit, std::string_view noun,
                    std::string_view more) {
  CappedList out;
  if (entries.size() > limit) {
    entries.resize(limit);
    out.notices.push_back(limit_reached(limit, noun, more));
  }
  out.kept = entries.size();
  std::string listing;
  for (const auto& e : entries) listing += sanitize_utf8(e) + "\n";
  out.truncation = truncate_head(listing, kMaxLines, kMaxBytes);
  if (out.truncation.truncated) out.notices.push_back(format_size(kMaxBytes) + " limit reached");
  return out;
}

}  // namespace moat::tools
