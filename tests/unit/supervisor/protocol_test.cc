// tests/unit/supervisor/protocol_test.cc: frame encoding, decoding at every split, limits.
#include "sandbox/protocol.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace moat::sandbox {
namespace {

using nlohmann::json;

std::string raw_frame(std::uint32_t n, const std::string& payload) {
  std::string out;
  out.push_back(static_cast<char>((n >> 24) & 0xff));
  out.push_back(static_cast<char>((n >> 16) & 0xff));
  out.push_back(static_cast<char>((n >> 8) & 0xff));
  out.push_back(static_cast<char>(n & 0xff));
  return out + payload;
}

std::vector<json> drain(FrameDecoder& d) {
  std::vector<json> out;
  for (;;) {
    auto r = d.next();
    EXPECT_TRUE(r.has_value()) << r.error().message();
    if (!r || !r->has_value()) return out;
    out.push_back(**r);
  }
}

TEST(FrameDecoder, GivesTheSameFramesWhereverTheBytesAreSplit) {
  const std::vector<json> msgs = {
      {{"type", "hello"}, {"version", 1}, {"workspace", "/w"}},
      {{"type", "call"}, {"id", "c1"}, {"tool", "bash"}, {"arguments", {{"command", "echo é✓"}}}},
      {{"type", "bye"}}};
  std::string stream;
  for (const auto& m : msgs) stream += encode_frame(m);
  for (std::size_t a = 0; a <= stream.size(); ++a) {
    for (std::size_t b = a; b <= stream.size(); b += 7) {
      SCOPED_TRACE("splits at " + std::to_string(a) + " and " + std::to_string(b));
      FrameDecoder d;
      std::vector<json> got;
      for (auto piece : {stream.substr(0, a), stream.substr(a, b - a), stream.substr(b)}) {
        d.feed(piece);
        auto more = drain(d);
        got.insert(got.end(), more.begin(), more.end());
      }
      ASSERT_EQ(got, msgs);
      EXPECT_EQ(d.buffered(), 0u);
    }
  }
}

TEST(FrameDecoder, OneByteAtATime) {
  const json m = {{"type", "cancel"}, {"id", "x"}};
  const std::string s = encode_frame(m) + encode_frame(m);
  FrameDecoder d;
  std::vector<json> got;
  for (char c : s) {
    d.feed(std::string_view(&c, 1));
    auto more = drain(d);
    got.insert(got.end(), more.begin(), more.end());
  }
  EXPECT_EQ(got.size(), 2u);
}

TEST(FrameDecoder, RejectsAnOversizedFrameBeforeItsPayloadArrives) {
  FrameDecoder d;
  d.feed(raw_frame(static_cast<std::uint32_t>(kMaxFrameBytes + 1), ""));
  auto r = d.next();
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message().find("exceeds the 16777216-byte limit"), std::string::npos)
      << r.error().message();
}

TEST(FrameDecoder, AcceptsAFrameOfExactlyTheLimit) {
  std::string payload = "{\"type\":\"bye\",\"pad\":\"";
  payload += std::string(kMaxFrameBytes - payload.size() - 2, 'x');
  payload += "\"}";
  ASSERT_EQ(payload.size(), kMaxFrameBytes);
  FrameDecoder d;
  d.feed(raw_frame(static_cast<std::uint32_t>(payload.size()), payload));
  auto r = d.next();
  ASSERT_TRUE(r.has_value()) << r.error().message();
  ASSERT_TRUE(r->has_value());
}

TEST(FrameDecoder, MalformedJsonIsAStickyErrorNamingTheProblem) {
  FrameDecoder d;
  d.feed(raw_frame(9, "{\"type\":x"));
  d.feed(encode_frame({{"type", "bye"}}));
  auto r = d.next();
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message().find("malformed JSON"), std::string::npos);
  EXPECT_FALSE(d.next().has_value()) << "the stream cannot be resynchronised after an error";
}

TEST(FrameDecoder, NonObjectPayloadIsRejected) {
  FrameDecoder d;
  d.feed(raw_frame(7, "[1,2,3]"));
  auto r = d.next();
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().message(), "frame is not a JSON object");
}

TEST(FrameDecoder, GarbageBytesNeverCrash) {
  // Deterministic pseudo-random garbage: every outcome is an error or a frame, never a crash.
  std::uint32_t x = 12345;
  for (int round = 0; round < 2000; ++round) {
    std::string junk;
    for (int i = 0; i < 64; ++i) {
      x = x * 1103515245 + 12345;
      junk.push_back(static_cast<char>(x >> 16));
    }
    FrameDecoder d;
    d.feed(junk);
    for (int i = 0; i < 4; ++i) {
      auto r = d.next();
      if (!r || !r->has_value()) break;
    }
  }
}

TEST(ValidateClientMessage, NamesTheMissingField) {
  auto r = validate_client_message({{"type", "call"}, {"id", "1"}, {"tool", "bash"}});
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().message(), "'call' frame is missing the field 'arguments' (an object)");
}

TEST(ValidateClientMessage, NamesTheWrongType) {
  auto r = validate_client_message(
      {{"type", "call"}, {"id", 7}, {"tool", "bash"}, {"arguments", json::object()}});
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().message(), "'call' frame field 'id' must be a string");
}

TEST(ValidateClientMessage, RejectsUnknownTypes) {
  auto r = validate_client_message({{"type", "execute"}});
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message().find("unknown frame type 'execute'"), std::string::npos);
}

TEST(ValidateClientMessage, RejectsAFrameWithoutType) {
  auto r = validate_client_message({{"id", "1"}});
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().message(), "frame has no string field 'type'");
}

TEST(ValidateClientMessage, AcceptsEachWellFormedType) {
  EXPECT_EQ(*validate_client_message({{"type", "hello"}, {"version", 1}, {"workspace", "/"}}),
            ClientMessage::kHello);
  EXPECT_EQ(*validate_client_message(
                {{"type", "call"}, {"id", "a"}, {"tool", "read"}, {"arguments", json::object()}}),
            ClientMessage::kCall);
  EXPECT_EQ(*validate_client_message({{"type", "cancel"}, {"id", "a"}}), ClientMessage::kCancel);
  EXPECT_EQ(*validate_client_message({{"type", "bye"}}), ClientMessage::kBye);
}

// The console channel's frames (docs/protocol.md, "The console channel").
TEST(ValidateClientMessage, AConsoleFrameNeedsTheSessionAndTheToken) {
  EXPECT_EQ(*validate_client_message({{"type", "console"}, {"session", "s"}, {"token", "t"}}),
            ClientMessage::kConsole);
  EXPECT_FALSE(validate_client_message({{"type", "console"}, {"session", "s"}}));
  EXPECT_FALSE(validate_client_message({{"type", "console"}, {"session", "s"}, {"token", 7}}));
  EXPECT_EQ(*validate_server_message({{"type", "attached"}, {"session", "s"}}),
            ServerMessage::kAttached);
  EXPECT_FALSE(validate_server_message({{"type", "attached"}}));
}

TEST(ValidateClientMessage, RejectsEmptyAndHugeCallIds) {
  EXPECT_FALSE(validate_client_message(
      {{"type", "call"}, {"id", ""}, {"tool", "read"}, {"arguments", json::object()}}));
  EXPECT_FALSE(validate_client_message({{"type", "call"},
                                        {"id", std::string(129, 'a')},
                                        {"tool", "read"},
                                        {"arguments", json::object()}}));
}

// Each field moatd echoes into a reply, an ask or the audit log has a bound, checked before
// any of that happens; the message names the field and its length, never its value.
TEST(ValidateClientMessage, RefusesEchoedFieldsOverTheirBounds) {
  const std::string huge(kMaxPathBytes + 1, 'a');
  auto hello =
      validate_client_message({{"type", "hello"}, {"version", 1}, {"workspace", "/" + huge}});
  ASSERT_FALSE(hello);
  EXPECT_EQ(hello.error().message(),
            "'hello' frame field 'workspace' is 4098 bytes long; the limit is 4096");
  EXPECT_FALSE(validate_client_message({{"type", "call"},
                                        {"id", "a"},
                                        {"tool", std::string(kMaxToolNameBytes + 1, 't')},
                                        {"arguments", json::object()}}));
  EXPECT_FALSE(validate_client_message(
      {{"type", "call"}, {"id", "a"}, {"tool", "read"}, {"arguments", {{"path", huge}}}}));
  EXPECT_FALSE(validate_client_message(
      {{"type", "call"},
       {"id", "a"},
       {"tool", "bash"},
       {"arguments", {{"command", std::string(kMaxCommandBytes + 1, 'x')}}}}));
  EXPECT_TRUE(
      validate_client_message({{"type", "call"},
                               {"id", "a"},
                               {"tool", "bash"},
                               {"arguments", {{"command", std::string(kMaxCommandBytes, 'x')}}}}));
  EXPECT_FALSE(
      validate_client_message({{"type", "cancel"}, {"id", std::string(kMaxCallIdBytes + 1, 'i')}}));
  EXPECT_FALSE(validate_client_message(
      {{"type", "answer"}, {"ask", std::string(kMaxAskIdBytes + 1, 'k')}, {"decision", "allow"}}));
}

TEST(ValidateClientMessage, RefusesAnAnswerFrameOverItsBound) {
  const json answer = {{"type", "answer"}, {"ask", "k"}, {"decision", "deny"}};
  EXPECT_TRUE(validate_client_message(answer, kMaxAnswerBytes));
  auto r = validate_client_message(answer, kMaxAnswerBytes + 1);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message(), "'answer' frame of 4097 bytes exceeds the 4096-byte limit");
}

// 100,000 levels in 200 kB overflowed moatd's connection thread when the frame was walked.
TEST(FrameDecoder, RefusesNestingDeeperThanTheLimitBeforeParsing) {
  const std::string ok = std::string(kMaxJsonDepth - 1, '[') + std::string(kMaxJsonDepth - 1, ']');
  FrameDecoder d;
  const std::string good = "{\"type\":\"bye\",\"a\":" + ok + ",\"s\":\"[[[[\\\"{{{{\"}";
  d.feed(raw_frame(static_cast<std::uint32_t>(good.size()), good));
  auto r = d.next();
  ASSERT_TRUE(r.has_value()) << r.error().message();
  ASSERT_TRUE(r->has_value()) << "brackets inside strings do not count";

  const std::string deep = "{\"a\":" + std::string(100000, '[') + std::string(100000, ']') + "}";
  FrameDecoder e;
  e.feed(raw_frame(static_cast<std::uint32_t>(deep.size()), deep));
  auto refused = e.next();
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().message(), "frame nests arrays and objects deeper than 64 levels");
}

// nlohmann's parse error quotes the token it stopped in: up to the whole frame.
TEST(FrameDecoder, AMalformedFramesErrorDoesNotQuoteTheFrame) {
  std::string payload = "{\"a\":\"" + std::string(kMaxFrameBytes - 20, 'x') + "\x01\"}";
  FrameDecoder d;
  d.feed(raw_frame(static_cast<std::uint32_t>(payload.size()), payload));
  auto r = d.next();
  ASSERT_FALSE(r.has_value());
  EXPECT_LE(r.error().message().size(), 520u);
}

// fuzz_protocol's first finding: the parser reports a number that overflows a double as
// out_of_range, not parse_error, and that exception used to escape the decoder (std::terminate).
TEST(FrameDecoder, ANumberTooLargeForADoubleIsAnErrorNotACrash) {
  const std::string payload = "{\"type\":\"hello\",\"n\":659e659}";
  FrameDecoder d;
  d.feed(raw_frame(static_cast<std::uint32_t>(payload.size()), payload));
  auto r = d.next();
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message().find("number overflow"), std::string::npos) << r.error().message();
}

TEST(ErrorFrame, CutsWhatItQuotesSoTheReplyAlwaysFits) {
  const json e =
      error_frame("workspace '" + std::string(kMaxFrameBytes, 'w') + "é'", "workspace", "id");
  EXPECT_LE(e["message"].get<std::string>().size(), kMaxErrorMessageBytes + 3);
  EXPECT_TRUE(try_encode_frame(e).has_value());
  EXPECT_FALSE(try_encode_frame({{"type", "result"}, {"pad", std::string(kMaxFrameBytes, 'x')}}));
  // A cut never splits a UTF-8 sequence.
  EXPECT_EQ(cut_utf8("ab\xc3\xa9", 3), "ab...");
  EXPECT_EQ(cut_utf8("ab\xc3\xa9", 4), "ab\xc3\xa9");
}

TEST(ValidateServerMessage, ChecksResultsAndProgress) {
  EXPECT_TRUE(validate_server_message(
      {{"type", "result"}, {"id", "a"}, {"isError", false}, {"content", json::array()}}));
  EXPECT_FALSE(validate_server_message({{"type", "result"}, {"id", "a"}}));
  EXPECT_TRUE(validate_server_message({{"type", "progress"}, {"id", "a"}, {"chunk", "x"}}));
  EXPECT_FALSE(validate_server_message({{"type", "surprise"}}));
}

}  // namespace
}  // namespace moat::sandbox
