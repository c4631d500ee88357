// tests/unit/sandbox/socket_owner_test.cc: the process behind a connection accepted on the
// host's loopback, found from the kernel's socket table and /proc/<pid>/fd (real processes,
// real sockets; no namespaces needed: the test's own namespaces stand in for the session's).
#include "sandbox/socket_owner.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/support/loopback.h"

namespace moat::sandbox {
namespace {

// A child that connects to 127.0.0.1:port (from an IPv6 socket as ::ffff:127.0.0.1 when
// `v6`), then waits until the pipe it reads closes.
class Connector {
 public:
  Connector(int port, bool v6) {
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      ::close(p[1]);
      int fd;
      if (v6) {
        fd = ::socket(AF_INET6, SOCK_STREAM, 0);
        sockaddr_in6 a{};
        a.sin6_family = AF_INET6;
        a.sin6_port = htons(static_cast<std::uint16_t>(port));
        inet_pton(AF_INET6, "::ffff:127.0.0.1", &a.sin6_addr);
        if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) _exit(1);
      } else {
        fd = testing::connect_to_port(port).release();
        if (fd < 0) _exit(1);
      }
      char c;
      (void)!::read(p[0], &c, 1);
      _exit(0);
    }
    ::close(p[0]);
    hold_ = UniqueFd(p[1]);
  }
  ~Connector() { end(); }
  void end() {
    hold_.reset();
    if (pid_ > 0) waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  UniqueFd hold_;
};

class SocketOwner : public ::testing::Test {
 protected:
  void SetUp() override { listener_ = testing::listen_on_free_port(&port_); }
  UniqueFd accept_one() {
    return UniqueFd(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
  }
  // A child connects (from an IPv6 socket when `v6`); its pid is what is found, whether or
  // not the candidates name it.
  void expect_child_found(bool v6, bool named) {
    Connector child(port_, v6);
    UniqueFd c = accept_one();
    ASSERT_TRUE(c.valid());
    auto pid = socket_peer_pid(c.get(), getpid(),
                               named ? std::vector<pid_t>{child.pid()} : std::vector<pid_t>{});
    ASSERT_TRUE(pid) << pid.error().message();
    EXPECT_EQ(*pid, child.pid());
  }
  UniqueFd listener_;
  int port_ = 0;
};

TEST_F(SocketOwner, TheProcessThatConnectedIsFoundAmongTheCandidates) {
  Connector other(port_, false);
  Connector child(port_, false);
  UniqueFd first = accept_one();
  UniqueFd second = accept_one();
  ASSERT_TRUE(first.valid() && second.valid());
  // accept order is connect order only when the children raced in order: ask for both.
  auto a = socket_peer_pid(first.get(), getpid(), {other.pid(), child.pid()});
  auto b = socket_peer_pid(second.get(), getpid(), {other.pid(), child.pid()});
  ASSERT_TRUE(a) << a.error().message();
  ASSERT_TRUE(b) << b.error().message();
  EXPECT_NE(*a, *b);
  EXPECT_TRUE((*a == other.pid() && *b == child.pid()) || (*a == child.pid() && *b == other.pid()));
}

TEST_F(SocketOwner, AProcessNoCandidateNamesIsFoundInThePidNamespace) {
  expect_child_found(/*v6=*/false, /*named=*/false);
}

TEST_F(SocketOwner, AnIpv6SocketReachingAnIpv4ListenerIsFound) {
  expect_child_found(/*v6=*/true, /*named=*/true);
}

TEST_F(SocketOwner, AProgramThatClosedItsEndIsNotFoundAndTheErrorSaysSo) {
  Connector child(port_, false);
  UniqueFd c = accept_one();
  ASSERT_TRUE(c.valid());
  child.end();
  auto pid = socket_peer_pid(c.get(), getpid(), {});
  ASSERT_FALSE(pid);
  EXPECT_NE(pid.error().message().find("closed"), std::string::npos) << pid.error().message();
}

}  // namespace
}  // namespace moat::sandbox
