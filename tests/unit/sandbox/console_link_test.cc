// tests/unit/sandbox/console_link_test.cc: who may take a session's console channel
// (sandbox/console_link.h): the token, the peer's uid, once.
#include "sandbox/console_link.h"

#include <gtest/gtest.h>
#include <sys/socket.h>

#include <string>

namespace moat::sandbox {
namespace {

constexpr uid_t kOwner = 1000;
const std::string kToken(64, 'a');

// One end of a fresh socketpair, standing in for a console's connection.
UniqueFd connection() {
  int sv[2];
  EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  UniqueFd{sv[1]}.reset();
  return UniqueFd(sv[0]);
}

// Issue 26 item 3: the token was spent before the uid was checked, so another local user who
// saw or guessed nothing could still burn the person's console by presenting any token, and
// the person's own console was then refused.
TEST(ConsoleLink, AClaimFromAnotherUidLeavesTheTokenToTheOwner) {
  ConsoleLink link(kOwner, kToken);
  UniqueFd stranger = connection();
  EXPECT_FALSE(link.claim(kToken, kOwner + 1, stranger));
  EXPECT_TRUE(stranger.valid()) << "a refused claim leaves the fd with the caller";
  UniqueFd owner = connection();
  EXPECT_TRUE(link.claim(kToken, kOwner, owner)) << "the stranger's claim spent the token";
  EXPECT_FALSE(owner.valid()) << "the link took the owner's connection";
}

TEST(ConsoleLink, AWrongTokenFromTheOwnersUidSpendsIt) {
  ConsoleLink link(kOwner, kToken);
  UniqueFd guess = connection();
  EXPECT_FALSE(link.claim(std::string(64, 'b'), kOwner, guess));
  UniqueFd owner = connection();
  EXPECT_FALSE(link.claim(kToken, kOwner, owner)) << "a guess must spend the token";
}

TEST(ConsoleLink, TheRightTokenWorksOnce) {
  ConsoleLink link(kOwner, kToken);
  UniqueFd first = connection();
  EXPECT_TRUE(link.claim(kToken, kOwner, first));
  UniqueFd second = connection();
  EXPECT_FALSE(link.claim(kToken, kOwner, second));
}

}  // namespace
}  // namespace moat::sandbox
