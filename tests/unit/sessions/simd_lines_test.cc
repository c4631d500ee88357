// tests/unit/sessions/simd_lines_test.cc: simdjson's reading of session lines gives what
// nlohmann's parser gives, and the padded read holds the file's exact bytes.
#include "sessions/simd_lines.h"

#include <fcntl.h>

#include <gtest/gtest.h>

#include "base/unique_fd.h"
#include "sessions/json_util.h"
#include "temp_dir.h"

namespace moat::sessions {
namespace {

// Each text as it would lie in a file: padded after its end.
Result<nlohmann::json> parse_padded(LineParser& parser, const std::string& text) {
  std::string buffer = text + std::string(64, '\0');
  return parser.parse(std::string_view(buffer.data(), text.size()));
}

TEST(LineParser, ParsesEveryJsonValueAsNlohmannDoes) {
  const char* const texts[] = {
      R"({"a":1,"b":-2,"c":18446744073709551615,"d":1.5,"e":-0.25,"f":1e300,"g":0})",
      R"({"s":"caf\u00e9 \ud83d\ude00 \" \\ \/ \b\f\n\r\t","u":"\u0000x","long":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"})",
      R"({"n":null,"t":true,"f":false,"empty":{},"none":[],"nested":[[1,[2,{"x":[3]}]],{"y":{}}]})",
      R"({"dup":1,"dup":2})",
      R"({"type":"message","id":"ab12","parentId":null,"message":{"role":"user","content":[{"type":"text","text":"hi"}]}})",
  };
  LineParser parser;
  for (const char* text : texts) {
    SCOPED_TRACE(text);
    auto ours = parse_padded(parser, text);
    ASSERT_TRUE(ours.has_value()) << ours.error().message();
    const nlohmann::json theirs = parse_json(text);
    EXPECT_EQ(*ours, theirs);
    // Same number types, so a dump is byte for byte the same.
    EXPECT_EQ(dump_json(*ours), dump_json(theirs));
  }
}

TEST(LineParser, ScanTakesTypeIdAndParentAndRefusesWhatIsNotAnObject) {
  LineParser parser;
  std::string line = R"({"type":"label","id":"e1","parentId":"e0","label":"x"})";
  line += std::string(64, '\0');
  auto keys = parser.scan(std::string_view(line.data(), line.size() - 64));
  ASSERT_TRUE(keys.has_value()) << keys.error().message();
  EXPECT_EQ(keys->type, "label");
  EXPECT_EQ(keys->id, "e1");
  EXPECT_EQ(keys->parent_id, "e0");
  std::string array = "[1]" + std::string(64, '\0');
  auto refused = parser.scan(std::string_view(array.data(), 3));
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().message(), "not a JSON object");
  std::string broken = "{\"a\":" + std::string(64, '\0');
  auto bad = parser.scan(std::string_view(broken.data(), 5));
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().message().rfind("not valid JSON (", 0), 0u) << bad.error().message();
}

TEST(ReadPadded, HoldsTheFilesExactBytesFollowedByZeroes) {
  testing::TempDir dir;
  for (size_t size : {size_t{0}, size_t{1}, size_t{4096}, size_t{3} << 20}) {
    SCOPED_TRACE(size);
    std::string data(size, '\0');
    for (size_t i = 0; i < size; ++i) data[i] = static_cast<char>('a' + i % 26);
    const std::string path = dir.path() + "/f";
    testing::spit(path, data);
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    ASSERT_TRUE(fd.valid());
    auto text = read_padded(fd.get());
    ASSERT_TRUE(text.has_value()) << text.error().message();
    EXPECT_EQ(text->view(), data);
    for (size_t i = 0; i < 64; ++i) EXPECT_EQ(text->bytes.get()[size + i], '\0');
  }
}

}  // namespace
}  // namespace moat::sessions
