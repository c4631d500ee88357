// tests/unit/sessions/jcs_test.cc: RFC 8785 canonical JSON, against the RFC's own examples.
#include "sessions/jcs.h"

#include <gtest/gtest.h>

#include "sessions/json_util.h"

namespace moat::sessions {
namespace {

std::string canon(const std::string& text) {
  const nlohmann::json j = parse_json(text);
  EXPECT_FALSE(j.is_discarded()) << text;
  auto out = canonical_json(j);
  EXPECT_TRUE(out.has_value()) << text;
  return out ? *out : "";
}

TEST(CanonicalJson, MatchesTheRfc8785SampleOfSection32) {
  const std::string input =
      R"({"numbers":[333333333.33333329,1E30,4.50,2e-3,0.000000000000000000000000001],)"
      R"("string":"\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/","literals":[null,true,false]})";
  EXPECT_EQ(canon(input),
            "{\"literals\":[null,true,false],\"numbers\":[333333333.3333333,1e+30,4.5,0.002,1e-27],"
            "\"string\":\"\xe2\x82\xac$\\u000f\\nA'B\\\"\\\\\\\\\\\"/\"}");
}

TEST(CanonicalJson, SortsKeysByUtf16CodeUnitsNotUtf8Bytes) {
  // RFC 8785 3.2.3: U+1F600 (surrogates D83D DE00) sorts before U+FB33 in UTF-16 order,
  // although its UTF-8 bytes (F0 ...) sort after EF AC B3.
  const std::string input =
      R"({"\u20ac":"Euro Sign","\r":"Carriage Return","\ufb33":"Hebrew Letter Dalet With Dagesh",)"
      R"("1":"One","\ud83d\ude00":"Emoji: Grinning Face","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis"})";
  const std::string out = canon(input);
  const char* order[] = {
      "\\r", "\"1\"", "\xc2\x80", "\xc3\xb6", "\xe2\x82\xac", "\xf0\x9f\x98\x80", "\xef\xac\xb3"};
  size_t pos = 0;
  for (const char* key : order) {
    const size_t at = out.find(key, pos);
    ASSERT_NE(at, std::string::npos) << key << " in " << out;
    pos = at;
  }
}

TEST(CanonicalJson, PrintsNumbersAsEcmascriptDoes) {
  EXPECT_EQ(es_number(1e21), "1e+21");
  EXPECT_EQ(es_number(1e20), "100000000000000000000");
  EXPECT_EQ(es_number(0.000001), "0.000001");
  EXPECT_EQ(es_number(0.0000001), "1e-7");
  EXPECT_EQ(es_number(-0.0), "0");
  EXPECT_EQ(es_number(-1.5), "-1.5");
  EXPECT_EQ(es_number(123.456), "123.456");
  EXPECT_EQ(es_number(5e-324), "5e-324");
  EXPECT_EQ(es_number(1.7976931348623157e308), "1.7976931348623157e+308");
  EXPECT_EQ(canon("[9007199254740993]"), "[9007199254740992]");  // past 2^53: a double
  EXPECT_EQ(canon("[-42,0,17]"), "[-42,0,17]");
}

TEST(CanonicalJson, RefusesInvalidUtf8AndNonFiniteNumbers) {
  nlohmann::json bad = std::string("\xc3\x28");
  EXPECT_FALSE(canonical_json(bad).has_value());
  nlohmann::json overlong = std::string("\xc0\xaf");
  EXPECT_FALSE(canonical_json(overlong).has_value());
  nlohmann::json nan = std::nan("");
  EXPECT_FALSE(canonical_json(nan).has_value());
}

// The audit log hashes a record without its "hash" member and writes it with it, from one
// canonical form (canonical_object): both must be exactly canonical_json's, wherever the
// member sorts, for keys past U+FFFF too (sorted by UTF-16 code units, not UTF-8 bytes).
TEST(CanonicalJson, AnObjectWithAMemberAddedIsCanonicalAsIfItHeldIt) {
  const char* objects[] = {
      R"({})",
      R"({"v":1,"seq":2,"type":"session.start","id":"x","prev":"sha256:00"})",
      R"({"audit_key":{"key_id":"k"},"call_id":"c","v":1,"zz":[1,{"b":2,"a":"\n\u0001"}]})",
      R"({"a":1,"b":"tab\there","g":null})",
      R"({"\ud83d\ude00":1,"\ufb33":2,"h":3,"\u20ac":{"\ud83d\ude00":[],"\ufb33":true}})",
      R"({"hasi":1,"has":2,"hash0":3,"h\u00f6":4})"};
  // None of them in an object: next to its keys in UTF-16 order and in UTF-8 order.
  const char* keys[] = {"hash", "\xef\xac\xb2", "\xf0\x9f\x98\x81", "0", "\xc3\xb6"};
  for (const char* text : objects) {
    for (const char* key : keys) {
      const nlohmann::json object = parse_json(text);
      ASSERT_FALSE(object.is_discarded()) << text;
      auto canon = canonical_object(object, key);
      ASSERT_TRUE(canon.has_value()) << text;
      EXPECT_EQ(canon->text, *canonical_json(object)) << text;
      nlohmann::json with = object;
      with[key] = "sha256:\"ab\"";
      auto line = canon->with_member("sha256:\"ab\"");
      ASSERT_TRUE(line.has_value()) << text;
      EXPECT_EQ(*line, *canonical_json(with)) << text << " + " << key;
    }
  }
  EXPECT_FALSE(canonical_object(parse_json(R"({"hash":1})"), "hash").has_value());
  EXPECT_FALSE(canonical_object(parse_json("[1]"), "hash").has_value());
  nlohmann::json bad_key = {{std::string("\xc3\x28"), 1}};
  EXPECT_FALSE(canonical_object(bad_key, "hash").has_value());
}

}  // namespace
}  // namespace moat::sessions
