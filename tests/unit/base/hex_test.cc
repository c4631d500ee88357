// tests/unit/base/hex_test.cc: base/hex.h.
#include "base/hex.h"

#include <gtest/gtest.h>

#include <string>

namespace moat {
namespace {

TEST(Hex, EncodesEachByteAsTwoLowercaseDigitsMostSignificantFirst) {
  const unsigned char bytes[] = {0x00, 0x0a, 0x1b, 0xf0, 0xff};
  EXPECT_EQ(hex_encode(bytes, sizeof bytes), "000a1bf0ff");
}

TEST(Hex, EncodesAStringsBytesIncludingNulAndHighBytes) {
  EXPECT_EQ(hex_encode(std::string("a\0\x80", 3)), "610080");
}

TEST(Hex, EncodesNothingAsTheEmptyString) { EXPECT_EQ(hex_encode(std::string()), ""); }

}  // namespace
}  // namespace moat
