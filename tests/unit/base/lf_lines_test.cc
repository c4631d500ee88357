// tests/unit/base/lf_lines_test.cc: lines taken from bytes that arrive in pieces.
#include "base/lf_lines.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace moat {
namespace {

TEST(LfLines, EachLineIsTakenOnceWholeWhateverPiecesItCameIn) {
  std::string pending;
  std::vector<std::string> lines;
  auto take = [&](std::string l) { lines.push_back(std::move(l)); };
  take_lf_lines(pending, "fir", take);
  EXPECT_TRUE(lines.empty());
  take_lf_lines(pending, "st\n\nsecond\nthi", take);
  EXPECT_EQ(lines, (std::vector<std::string>{"first", "", "second"}));
  EXPECT_EQ(pending, "thi");
  take_lf_lines(pending, "rd\r\n", take);
  EXPECT_EQ(lines.back(), "third\r") << "only LF ends a line; a CR stays the caller's";
  EXPECT_EQ(pending, "");
}

}  // namespace
}  // namespace moat
