// tools/truncate.h: the limits every tool enforces (and its description states), and the
// head/tail truncation that applies them. One source: change a constant here and both the
// behaviour and what the model reads change together.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace moat::tools {

inline constexpr std::size_t kMaxLines = 2000;                  // lines of one result
inline constexpr std::size_t kMaxBytes = 50 * 1024;             // bytes of one result
inline constexpr std::size_t kGrepMaxLineLength = 500;          // characters of one grep line
inline constexpr std::size_t kGrepDefaultLimit = 100;           // matches
inline constexpr std::size_t kFindDefaultLimit = 1000;          // paths
inline constexpr std::size_t kLsDefaultLimit = 500;             // entries
inline constexpr std::size_t kMaxImageBytes = 5 * 1024 * 1024;  // read: one image block
inline constexpr std::size_t kMaxReadFileBytes = 256ull * 1024 * 1024;  // read loads the file

struct Truncation {
  std::string text;  // what is kept
  bool truncated = false;
  std::string truncated_by;     // "lines" or "bytes" ("" when not truncated)
  std::size_t total_lines = 0;  // lines of the input
  std::size_t total_bytes = 0;
  std::size_t output_lines = 0;  // whole lines kept
  // Head only: the first line alone exceeds max_bytes, nothing was kept.
  bool first_line_exceeds_limit = false;
  // Tail only: the last line alone exceeds max_bytes and its tail was kept.
  bool last_line_partial = false;
};

// Keeps the first whole lines that fit both limits (read, grep, find, ls).
Truncation truncate_head(std::string_view text, std::size_t max_lines = kMaxLines,
                         std::size_t max_bytes = kMaxBytes);
// Keeps the last whole lines that fit both limits (bash). A single over-long last line
// keeps its tail, cut on a UTF-8 boundary.
Truncation truncate_tail(std::string_view text, std::size_t max_lines = kMaxLines,
                         std::size_t max_bytes = kMaxBytes);

// Cuts a single line to max_chars code points, adding "... [truncated]" (grep).
std::string truncate_line(std::string_view line, std::size_t max_chars = kGrepMaxLineLength);

// "50 KB", "1.5 MB", "12 B": what the notices and descriptions print.
std::string format_size(std::size_t bytes);

// Replaces every invalid UTF-8 sequence with U+FFFD, so a result always serialises as JSON.
std::string sanitize_utf8(std::string_view s);

// Appends "\n\n[notice. notice]" (a trailing newline of text is dropped first); text is
// returned unchanged when there are no notices.
std::string append_notices(std::string text, const std::vector<std::string>& notices);

// "100 matches limit reached. Use limit=200 for more" + `more` (", or refine pattern").
std::string limit_reached(std::size_t limit, std::string_view noun, std::string_view more = {});

// A list (find's paths, ls's entries) cut to `limit` entries, then to kMaxLines/kMaxBytes
// of text, one entry a line, with the notice of each cut.
struct CappedList {
  std::size_t kept = 0;  // entries left after the limit
  Truncation truncation;
  std::vector<std::string> notices;
};
CappedList cap_list(std::vector<std::string> entries, std::size_t limit, std::string_view noun,
                    std::string_view more = {});

// Counts lines the way the tools number them: "a\nb" and "a\nb\n" both have 2 lines.
std::size_t count_lines(std::string_view text);

}  // namespace moat::tools
