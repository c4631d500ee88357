// tests/unit/base/json_depth_test.cc: the raw-byte depth check moatd's frames and an MCP
// server's lines pass before parsing (base/json_depth.h).
#include "base/json_depth.h"

#include <gtest/gtest.h>

#include <string>

namespace moat {
namespace {

std::string nested(std::size_t n) { return std::string(n, '[') + std::string(n, ']'); }

TEST(JsonDepth, CountsArraysAndObjectsUpToTheBoundAndNotOneMore) {
  EXPECT_FALSE(json_nests_deeper_than(nested(64), 64));
  EXPECT_TRUE(json_nests_deeper_than(nested(65), 64));
  EXPECT_TRUE(json_nests_deeper_than("{\"a\":{\"b\":[1]}}", 2));
  EXPECT_FALSE(json_nests_deeper_than("{\"a\":{\"b\":[1]}}", 3));
}

TEST(JsonDepth, BracketsInsideStringsAndEscapedQuotesDoNotCount) {
  EXPECT_FALSE(json_nests_deeper_than("[\"[[[[{{{{\"]", 1));
  EXPECT_FALSE(json_nests_deeper_than("[\"a\\\"[[[[\"]", 1));
}

// sandbox/protocol.cc's own copy let a closing bracket take the count below zero, so leading
// strays bought as many levels as they were long.
TEST(JsonDepth, AStrayClosingBracketBuysNoDepth) {
  EXPECT_TRUE(json_nests_deeper_than("]]]]" + nested(5), 4));
}

}  // namespace
}  // namespace moat
