// base/sse.h: a WHATWG server-sent-events parser that is indifferent to how the bytes are
// split: model providers' streams (agent/providers) and MCP's HTTP transports (tools/mcp_http).
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace moat {

// One dispatched event (https://html.spec.whatwg.org/multipage/server-sent-events.html).
struct SseEvent {
  std::string type = "message";  // the `event:` field, "message" when absent
  std::string data;              // `data:` lines joined with '\n', no trailing newline
  std::string id;                // the last event id seen so far
};

// Feed bytes as they arrive; every complete event goes to the sink in order. The result is
// the same for every split of the input (a line, a CRLF or a UTF-8 sequence may straddle two
// feeds) because nothing is interpreted before its line is complete.
class SseParser {
 public:
  using Sink = std::function<void(const SseEvent&)>;
  explicit SseParser(Sink sink) : sink_(std::move(sink)) {}

  void feed(std::string_view bytes);
  // End of stream. Unlike the WHATWG text, a pending event (data lines without the final
  // blank line) is dispatched: recorded Anthropic streams end that way (wire-fixtures README).
  void finish();

  size_t comment_lines() const { return comment_lines_; }
  size_t events_dispatched() const { return events_; }
  std::optional<long> retry_ms() const { return retry_ms_; }

 private:
  void process_line(std::string_view line);
  void dispatch();

  Sink sink_;
  std::string line_;             // bytes of the current, unterminated line
  bool after_cr_ = false;        // the previous byte was CR: a following LF belongs to it
  bool at_stream_start_ = true;  // a UTF-8 BOM is skipped only here
  std::string event_type_;
  std::string data_;
  bool has_data_ = false;
  std::string last_id_;
  size_t comment_lines_ = 0;
  size_t events_ = 0;
  std::optional<long> retry_ms_;
};

// Replaces invalid UTF-8 with U+FFFD, as the spec's UTF-8 decode step does.
std::string sanitize_utf8(std::string_view bytes);

}  // namespace moat
