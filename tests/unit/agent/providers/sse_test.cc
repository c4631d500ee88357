// tests/unit/agent/providers/sse_test.cc: WHATWG event-stream framing, for every split of the
// input.
#include "base/sse.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace moat::agent::providers {
namespace {

struct Parsed {
  std::vector<SseEvent> events;
  size_t comments = 0;
};

Parsed parse_in_pieces(std::string_view body, const std::vector<size_t>& cuts) {
  Parsed out;
  SseParser p([&](const SseEvent& e) { out.events.push_back(e); });
  size_t start = 0;
  for (size_t c : cuts) {
    p.feed(body.substr(start, c - start));
    start = c;
  }
  p.feed(body.substr(start));
  p.finish();
  out.comments = p.comment_lines();
  return out;
}

bool same(const Parsed& a, const Parsed& b) {
  if (a.events.size() != b.events.size() || a.comments != b.comments) return false;
  for (size_t i = 0; i < a.events.size(); ++i)
    if (a.events[i].type != b.events[i].type || a.events[i].data != b.events[i].data ||
        a.events[i].id != b.events[i].id)
      return false;
  return true;
}

TEST(SseParser, JoinsDataLinesWithNewlineAndDropsTheLastOne) {
  auto p = parse_in_pieces("data: a\ndata:b\ndata\n\n", {});
  ASSERT_EQ(p.events.size(), 1u);
  EXPECT_EQ(p.events[0].data, "a\nb\n");
  EXPECT_EQ(p.events[0].type, "message");
}

TEST(SseParser, StripsExactlyOneLeadingSpace) {
  auto p = parse_in_pieces("data:  two\n\n", {});
  ASSERT_EQ(p.events.size(), 1u);
  EXPECT_EQ(p.events[0].data, " two");
}

TEST(SseParser, AcceptsCrLfAndBareCrAsLineEnds) {
  auto p = parse_in_pieces("event: x\r\ndata: 1\r\rdata: 2\r\n\r\n", {});
  ASSERT_EQ(p.events.size(), 2u);
  EXPECT_EQ(p.events[0].type, "x");
  EXPECT_EQ(p.events[0].data, "1");
  EXPECT_EQ(p.events[1].type, "message");  // the type resets after each dispatch
  EXPECT_EQ(p.events[1].data, "2");
}

TEST(SseParser, CountsCommentLinesAndIgnoresThem) {
  auto p = parse_in_pieces(": keepalive\n: OPENROUTER PROCESSING\n\ndata: x\n\n", {});
  EXPECT_EQ(p.comments, 2u);
  ASSERT_EQ(p.events.size(), 1u);
}

TEST(SseParser, BlankLineWithoutDataDispatchesNothingAndResetsType) {
  auto p = parse_in_pieces("event: ping\n\ndata: y\n\n", {});
  ASSERT_EQ(p.events.size(), 1u);
  EXPECT_EQ(p.events[0].type, "message");
}

TEST(SseParser, EmptyDataFieldStillDispatchesAnEvent) {
  auto p = parse_in_pieces("data\n\n", {});
  ASSERT_EQ(p.events.size(), 1u);
  EXPECT_EQ(p.events[0].data, "");
}

TEST(SseParser, EofDispatchesAPendingEvent) {
  auto p = parse_in_pieces("event: message_stop\ndata: {\"type\":\"message_stop\"}", {});
  ASSERT_EQ(p.events.size(), 1u);
  EXPECT_EQ(p.events[0].type, "message_stop");
  EXPECT_EQ(p.events[0].data, "{\"type\":\"message_stop\"}");
}

TEST(SseParser, IdPersistsAcrossEventsAndRetryNeedsDigits) {
  std::vector<SseEvent> events;
  SseParser p([&](const SseEvent& e) { events.push_back(e); });
  p.feed("id: 7\nretry: 15x\ndata: a\n\ndata: b\nretry: 250\n\n");
  p.finish();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[1].id, "7");
  ASSERT_TRUE(p.retry_ms().has_value());
  EXPECT_EQ(*p.retry_ms(), 250);
}

TEST(SseParser, SkipsALeadingBomOnlyAtStreamStart) {
  auto p = parse_in_pieces(
      "\xEF\xBB\xBF"
      "data: a\n\n\xEF\xBB\xBF"
      "data: b\n\n",
      {});
  ASSERT_EQ(p.events.size(), 1u);  // the second BOM makes the field name unknown
  EXPECT_EQ(p.events[0].data, "a");
}

TEST(SseParser, ReplacesInvalidUtf8WithReplacementCharacter) {
  auto p = parse_in_pieces(
      "data: a\xFF"
      "b\xC3\n\n",
      {});
  ASSERT_EQ(p.events.size(), 1u);
  EXPECT_EQ(p.events[0].data,
            "a\xEF\xBF\xBD"
            "b\xEF\xBF\xBD");
}

TEST(SseParser, EverySingleCutGivesTheSameEventsIncludingSplitUtf8AndCrLf) {
  // Multi-byte characters (2, 3 and 4 bytes), CRLF, a comment and a pending event at EOF.
  const std::string body =
      ": hi\r\nevent: e\r\ndata: caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x90\xB1\r\n\r\n"
      "data: {\"k\":\"\xE6\x97\xA5\"}\rdata: two\r\rdata: tail";
  const Parsed whole = parse_in_pieces(body, {});
  ASSERT_EQ(whole.events.size(), 3u);
  EXPECT_EQ(whole.events[0].data, "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x90\xB1");
  for (size_t cut = 1; cut < body.size(); ++cut) {
    SCOPED_TRACE("cut at byte " + std::to_string(cut));
    EXPECT_TRUE(same(whole, parse_in_pieces(body, {cut})));
  }
  std::vector<size_t> every_byte;
  for (size_t i = 1; i < body.size(); ++i) every_byte.push_back(i);
  EXPECT_TRUE(same(whole, parse_in_pieces(body, every_byte)));
}

TEST(SseParser, RandomMultiCutsGiveTheSameEvents) {
  std::string body;
  for (int i = 0; i < 200; ++i)
    body += "event: t" + std::to_string(i % 3) + "\ndata: \xC3\xA9" + std::to_string(i) +
            (i % 7 == 0 ? "\r\n\r\n" : "\n\n");
  const Parsed whole = parse_in_pieces(body, {});
  ASSERT_EQ(whole.events.size(), 200u);
  for (unsigned seed = 0; seed < 50; ++seed) {
    std::mt19937 rng(seed);
    std::vector<size_t> cuts;
    for (size_t pos = 0;;) {
      pos += 1 + rng() % 17;
      if (pos >= body.size()) break;
      cuts.push_back(pos);
    }
    SCOPED_TRACE("seed " + std::to_string(seed));
    EXPECT_TRUE(same(whole, parse_in_pieces(body, cuts)));
  }
}

}  // namespace
}  // namespace moat::agent::providers
