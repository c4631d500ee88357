// tests/unit/base/random_test.cc: base/random.h, with fake kernels standing in for getrandom.
#include "base/random.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <set>

namespace moat {
namespace {

int g_calls = 0;

ssize_t always_fails(void*, std::size_t, unsigned) {
  ++g_calls;
  errno = ENOSYS;
  return -1;
}

ssize_t always_interrupted(void*, std::size_t, unsigned) {
  ++g_calls;
  errno = EINTR;
  return -1;
}

// One byte per call, 0xab each time.
ssize_t one_byte_at_a_time(void* buf, std::size_t, unsigned) {
  ++g_calls;
  std::memset(buf, 0xab, 1);
  return 1;
}

// Fails with EINTR on every other call, else fills the whole request with 0x01.
ssize_t interrupted_now_and_then(void* buf, std::size_t len, unsigned) {
  if (g_calls++ % 2 == 0) {
    errno = EINTR;
    return -1;
  }
  std::memset(buf, 0x01, len);
  return static_cast<ssize_t>(len);
}

TEST(Random, AKernelThatKeepsFailingIsAnErrorAfterBoundedAttemptsNotASpin) {
  g_calls = 0;
  unsigned char buf[8];
  auto r = random_bytes(buf, sizeof buf, always_fails);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ENOSYS);
  EXPECT_EQ(g_calls, kRandomAttempts);
}

TEST(Random, EndlessInterruptionsAreAlsoBounded) {
  g_calls = 0;
  auto r = random_hex(4, always_interrupted);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, EINTR);
  EXPECT_EQ(g_calls, kRandomAttempts);
}

TEST(Random, ShortReadsContinueWhereTheyStopped) {
  g_calls = 0;
  auto r = random_hex(3, one_byte_at_a_time);
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(*r, "ababab");
  EXPECT_EQ(g_calls, 3);
}

TEST(Random, AnOccasionalInterruptionIsRetried) {
  g_calls = 0;
  auto r = random_hex(2, interrupted_now_and_then);
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(*r, "0101");
}

TEST(Random, TheKernelsPoolGivesDistinctHexIdsOfTheAskedLength) {
  std::set<std::string> seen;
  for (int i = 0; i < 100; ++i) {
    auto r = random_hex(16);
    ASSERT_TRUE(r) << r.error().message();
    ASSERT_EQ(r->size(), 32u);
    EXPECT_EQ(r->find_first_not_of("0123456789abcdef"), std::string::npos) << *r;
    seen.insert(*r);
  }
  EXPECT_EQ(seen.size(), 100u);
  EXPECT_EQ(random_hex_or_abort(4).size(), 8u);
}

}  // namespace
}  // namespace moat
