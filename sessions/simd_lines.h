// sessions/simd_lines.h: session lines read and parsed with simdjson, a validating JSON
// parser many times faster than nlohmann's (issue 19: a resume at the cost of reading the
// file). At open every line is validated and only its type, id and parentId are taken; an
// entry becomes a nlohmann::json (the shape the rest of moat uses) only when it is asked for.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "sessions/message.h"

namespace moat::sessions {

// A file's bytes followed by the zeroed padding simdjson reads past a text's end, in a
// private anonymous mapping (huge pages when large: faulting in a 30 MB buffer 4 KiB at a
// time cost three times the read itself).
struct Unmap {
  size_t length = 0;
  void operator()(char* p) const;
};
struct PaddedText {
  std::unique_ptr<char, Unmap> bytes;
  size_t size = 0;
  std::string_view view() const { return {bytes.get(), size}; }
};

// Reads `fd` to its end into a padded buffer (one copy: the bytes go straight to it).
Result<PaddedText> read_padded(int fd);

// Lines added one at a time (a session's appends), each followed by at least simdjson's
// padding, at addresses that never change: in chunks that are never moved or freed before
// the arena.
class PaddedArena {
 public:
  // A copy of `bytes`; the view stays valid for the arena's life.
  Result<std::string_view> add(std::string_view bytes);

 private:
  static constexpr size_t kChunk = size_t{256} << 10;
  std::vector<PaddedText> chunks_;
  size_t capacity_ = 0;  // of the last chunk, padding not counted
};

// What an open needs of an entry line.
struct LineKeys {
  std::string_view type;  // "" when absent or not a string
  std::string_view id;
  std::string_view parent_id;  // "" when null, absent or not a string
  bool has_message = false;    // a "message" member, whatever its value
  std::unique_ptr<ToolCallRole> tool_calls;  // the message's, null when it has none
};

// One parser, reused line after line (it keeps its buffers). Not thread-safe.
class LineParser {
 public:
  LineParser();
  ~LineParser();
  LineParser(const LineParser&) = delete;
  LineParser& operator=(const LineParser&) = delete;

  // Validates the JSON text `line` (inside a PaddedText, so the padding follows it) and
  // returns its keys, valid until the next call. An error says what is wrong: simdjson's
  // message, or "not a JSON object".
  Result<LineKeys> scan(std::string_view line);
  // The whole text as nlohmann::json, equal to what nlohmann's own parser makes of it.
  Result<nlohmann::json> parse(std::string_view line);
  // Only the member `key` of the object `line`; nullopt when it has none.
  Result<std::optional<nlohmann::json>> parse_member(std::string_view line, std::string_view key);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace moat::sessions
