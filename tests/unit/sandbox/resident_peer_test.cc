// tests/unit/sandbox/resident_peer_test.cc: a resident moatd's checks of its client
// (sandbox/resident_peer.h) against real peer processes: one forked as the person's CLI is
// (nothing set), one as the agent loop is (no_new_privs and a seccomp filter, as
// agent/unprivileged.cc sets them), and one that has gone.
#include <gtest/gtest.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "sandbox/resident_peer.h"

namespace moat::sandbox {
namespace {

enum class Peer { kPlain, kNoNewPrivs, kLoopLike, kGone };

// A filter that allows every syscall: what matters is that the peer carries one.
int install_allow_all_filter() {
  sock_filter allow = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
  sock_fprog prog{1, &allow};
  return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
}

// In the forked peer: confine itself as `kind` says, connect, then wait for the judge's close.
[[noreturn]] void peer_in_child(Peer kind, const std::string& path) {
  if (kind == Peer::kNoNewPrivs || kind == Peer::kLoopLike)
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) _exit(10);
  if (kind == Peer::kLoopLike && install_allow_all_filter() != 0) _exit(11);
  const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  path.copy(addr.sun_path, sizeof addr.sun_path - 1);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) _exit(12);
  if (kind == Peer::kGone) _exit(0);
  char c = 0;
  (void)!write(fd, &c, 1);
  (void)!read(fd, &c, 1);  // until the judge closes
  _exit(0);
}

// Forks a peer of `kind`, accepts its connection and judges it as a resident moatd of
// `own_uid` would.
bool judge(Peer kind, uid_t own_uid = geteuid()) {
  char tmpl[] = "/tmp/resident_peer_XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  const std::string path = dir + "/s";
  const int l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  path.copy(addr.sun_path, sizeof addr.sun_path - 1);
  EXPECT_EQ(bind(l, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  EXPECT_EQ(listen(l, 1), 0);
  const pid_t pid = fork();
  if (pid == 0) peer_in_child(kind, path);
  const int c = accept4(l, nullptr, nullptr, SOCK_CLOEXEC);
  int status = 0;
  if (kind == Peer::kGone) waitpid(pid, &status, 0);  // judged after it has exited
  else {
    char b;
    EXPECT_EQ(read(c, &b, 1), 1);  // its confinement is set before it connects
  }
  const bool persons = is_persons_peer(c, own_uid);
  close(c);
  close(l);
  if (kind != Peer::kGone) waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "peer status " << status;
  unlink(path.c_str());
  rmdir(dir.c_str());
  return persons;
}

TEST(ResidentPeer, APlainPeerOfMoatdsUidIsThePersons) { EXPECT_TRUE(judge(Peer::kPlain)); }

TEST(ResidentPeer, ALoopLikePeerWithNoNewPrivsAndAFilterIsAnAgent) {
  EXPECT_FALSE(judge(Peer::kLoopLike));
}

TEST(ResidentPeer, APeerWithNoNewPrivsAloneIsAnAgent) { EXPECT_FALSE(judge(Peer::kNoNewPrivs)); }

TEST(ResidentPeer, APeerOfAnotherUidIsAnAgent) {
  EXPECT_FALSE(judge(Peer::kPlain, geteuid() + 1));
}

TEST(ResidentPeer, APeerThatHasExitedIsAnAgent) { EXPECT_FALSE(judge(Peer::kGone)); }

TEST(ResidentPeer, ConfinementIsReadFromBothStatusLines) {
  auto c = parse_confinement("Name:\tmoat\nNoNewPrivs:\t1\nSeccomp:\t2\nSeccomp_filters:\t1\n");
  ASSERT_TRUE(c) << c.error().message();
  EXPECT_TRUE(c->no_new_privs);
  EXPECT_EQ(c->seccomp, 2);
  auto plain = parse_confinement("NoNewPrivs:\t0\nSeccomp:\t0\n");
  ASSERT_TRUE(plain);
  EXPECT_FALSE(plain->no_new_privs);
  EXPECT_EQ(plain->seccomp, 0);
}

TEST(ResidentPeer, AStatusWithoutTheSeccompLineIsAnErrorNamingIt) {
  auto c = parse_confinement("NoNewPrivs:\t0\nSeccomp_filters:\t0\n");
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().message().find("'Seccomp:'"), std::string::npos) << c.error().message();
}

TEST(ResidentPeer, OwnerOnlyRefusesAnotherUidNamingIt) {
  SupervisorOptions options;
  options.owner_only = true;
  const PeerCred other{1, geteuid() + 1, getegid()};
  auto r = options_for_peer(options, -1, other);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("uid " + std::to_string(geteuid() + 1)), std::string::npos)
      << r.error().message();
  EXPECT_NE(r.error().message().find("--owner-only"), std::string::npos);
  const PeerCred own{1, geteuid(), getegid()};
  EXPECT_TRUE(options_for_peer(options, -1, own));
}

}  // namespace
}  // namespace moat::sandbox
