// tests/unit/base/log_test.cc: base/log.h's quoted(), how untrusted text reaches a log line.
#include "base/log.h"

#include <gtest/gtest.h>

#include <string>

#include "base/utf8.h"

namespace moat {
namespace {

// Spelled moat::quoted: for a std::string argument, unqualified quoted() also finds std::quoted.

TEST(Quoted, WrapsTextInSingleQuotesAndEscapesQuotesAndBackslashes) {
  EXPECT_EQ(moat::quoted("it's a\\b"), R"('it\'s a\\b')");
  EXPECT_EQ(moat::quoted(""), "''");
}

TEST(Quoted, WritesControlCharactersAsHexEscapes) {
  EXPECT_EQ(moat::quoted(std::string("a\nb\x1b[2J\x7f\0", 9)), R"('a\x0ab\x1b[2J\x7f\x00')");
}

TEST(Quoted, KeepsWellFormedUtf8AsItIs) {
  EXPECT_EQ(moat::quoted("caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x90\x9f"),
            "'caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x90\x9f'");
}

TEST(Quoted, WritesAByteThatIsNotUtf8AsAHexEscapeNotRaw) {
  // A lone continuation byte, a truncated sequence, an overlong form and a surrogate.
  EXPECT_EQ(moat::quoted("a\x80z"), R"('a\x80z')");
  EXPECT_EQ(moat::quoted("\xe2\x9c"), R"('\xe2\x9c')");
  EXPECT_EQ(moat::quoted("\xc0\xaf"), R"('\xc0\xaf')");
  EXPECT_EQ(moat::quoted("\xed\xa0\x80"), R"('\xed\xa0\x80')");
}

TEST(Quoted, SpellsNonUtf8BytesAsHexEscapeNonUtf8Does) {
  const std::string bytes = "dir/\xff\xfe-name\x80";
  EXPECT_EQ(moat::quoted(bytes), "'" + hex_escape_non_utf8(bytes) + "'");
}

}  // namespace
}  // namespace moat
