// tests/unit/sessions/byte_strings_test.cc: non-UTF-8 strings in audit records.
#include "sessions/byte_strings.h"

#include <gtest/gtest.h>

#include "base/base64.h"
#include "base/byte_strings.h"
#include "sessions/audit.h"
#include "sessions/jcs.h"
#include "sessions/json_util.h"
#include "sessions/jsonl.h"
#include "sessions/render_audit.h"
#include "temp_dir.h"

namespace moat::sessions {
namespace {

using nlohmann::json;

// Every single byte value, alone and inside text, comes back exactly from the record.
TEST(ByteStrings, EveryByteSurvivesTheRoundTrip) {
  for (int b = 0; b < 256; ++b) {
    const std::string s = "a" + std::string(1, static_cast<char>(b)) + "\xc3\xa9";
    const json enc = encode_byte_strings(json{{"argv", {s}}});
    ASSERT_TRUE(canonical_json(enc).has_value()) << b;
    const json& word = enc["argv"][0];
    if (is_utf8(s)) {
      EXPECT_EQ(word, s);
    } else {
      ASSERT_TRUE(word.is_object()) << b;
      EXPECT_EQ(base64_decode(word["bytes"].get<std::string>()), s) << b;
    }
  }
}

TEST(ByteStrings, DisplayKeepsValidTextAndEscapesTheRestAsHex) {
  EXPECT_EQ(display_text(encode_byte_strings(json("echo \xff caf\xc3\xa9 \xc3"))),
            "echo \\xff caf\xc3\xa9 \\xc3");
  EXPECT_EQ(display_text(json("plain")), "plain");
  EXPECT_EQ(display_text(json(3)), "");
}

TEST(ByteStrings, TheAuditLogWritesANonUtf8RecordInsteadOfFailing) {
  testing::TempDir dir;
  auto log = AuditLog::open(dir.path(), "01890a5d-ac96-774b-bcce-b302099a8057", "sha256:5e1c");
  ASSERT_TRUE(log.has_value()) << log.error().message();
  ASSERT_TRUE((*log)->append("decision", {{"input", {{"argv", {"echo", "\xff"}}}}}).has_value());
  const std::string data = testing::slurp((*log)->path());
  const std::vector<Line> lines = whole_lines(data);
  ASSERT_EQ(lines.size(), 1u);
  const json rec = parse_json(lines[0].text);
  EXPECT_EQ(rec["input"]["argv"][1], json({{"bytes", "/w=="}}));
}

// moatd resolves the workspace without following symlinks, so a hello (JSON text) can only
// name a UTF-8 one; the record and its display still hold whatever bytes the host path has.
TEST(ByteStrings, ShowPrintsANonUtf8WorkspaceWithHexEscapes) {
  const json start = encode_byte_strings(json{{"type", "session.start"},
                                              {"seq", 1},
                                              {"moat_version", "0.1.0"},
                                              {"workspace", "/home/me/caf\xe9"}});
  EXPECT_EQ(start["workspace"], json({{"bytes", base64_encode("/home/me/caf\xe9")}}));
  EXPECT_NE(audit_line(start).find(" 0.1.0 /home/me/caf\\xe9"), std::string::npos)
      << audit_line(start);
}

// moatd's channels to the sandbox's worker decode what they encode: every byte value, alone,
// in text and as an argv word or a nested path, comes back exactly (base/byte_strings.h).
TEST(ByteStrings, DecodeGivesBackExactlyWhatEncodeWasGiven) {
  for (int b = 0; b < 256; ++b) {
    const std::string s = "/ws/" + std::string(1, static_cast<char>(b)) + "/caf\xc3\xa9";
    const json value = {{"op", "write"}, {"path", s}, {"args", {{"_listed", {s, "plain"}}}}};
    const std::string wire = dump_lossless(value);
    EXPECT_EQ(first_non_utf8_string(json::parse(wire)), std::nullopt) << b;
    EXPECT_EQ(decode_byte_strings(json::parse(wire)), value) << b;
  }
  // A {"bytes"} object whose base64 is not the canonical encoding is left as it is: the
  // receiver then finds an object where it wanted a string and fails, instead of guessing.
  EXPECT_TRUE(decode_byte_strings(json{{"bytes", "/w=x"}}).is_object());
  EXPECT_EQ(first_non_utf8_string(json{{"a",
                                        {"ok",
                                         "b\xff"
                                         "d"}}}),
            std::optional<std::string>("b\xff"
                                       "d"));
}

}  // namespace
}  // namespace moat::sessions
