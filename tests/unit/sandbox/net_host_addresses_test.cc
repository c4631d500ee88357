// tests/unit/sandbox/net_host_addresses_test.cc: the host's own addresses as the proxy sees them:
// read at the start, read again only after a change is announced, and a failed read refuses.
#include "sandbox/net_host_addresses.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <thread>

#include "base/sys.h"

namespace moat::sandbox {
namespace {

TEST(HostAddresses, TheHostsInterfacesHoldLoopbackAndNoGlobalAddressTheyDoNotHave) {
  auto list = list_interface_addresses();
  ASSERT_TRUE(list) << list.error().message();
  EXPECT_EQ(list->count("127.0.0.1"), 1u);
  HostAddresses host = HostAddresses::watching_interfaces();
  auto lo = host.interface_of("127.0.0.1");
  ASSERT_TRUE(lo) << lo.error().message();
  EXPECT_EQ(lo->value_or(""), "lo");
  auto none = host.interface_of("1.1.1.1");
  ASSERT_TRUE(none);
  EXPECT_FALSE(none->has_value());
  for (const auto& [address, iface] : *list) {  // eth0's address too: what item 9 reached
    SCOPED_TRACE(address);
    auto found = host.interface_of(address);
    ASSERT_TRUE(found);
    EXPECT_EQ(found->value_or("none"), iface);
  }
}

// A fake lister whose answer the test changes, and a pipe standing in for rtnetlink.
struct FakeInterfaces {
  AddressMap now = {{"127.0.0.1", "lo"}};
  int reads = 0;
  bool broken = false;
  AddressLister lister() {
    return [this]() -> Result<AddressMap> {
      ++reads;
      if (broken) return fail(Error::from_errno("getifaddrs", ENOMEM));
      return now;
    };
  }
};

TEST(HostAddresses, AnAddressAddedLaterIsSeenOnceTheChangeIsAnnounced) {
  FakeInterfaces fake;
  auto pipe = sys::make_pipe();
  ASSERT_TRUE(pipe);
  ASSERT_EQ(fcntl(pipe->first.get(), F_SETFL, O_NONBLOCK), 0);
  HostAddresses host(fake.lister(), std::move(pipe->first));
  EXPECT_EQ(fake.reads, 1) << "read as the session starts";
  fake.now["203.0.113.5"] = "eth1";
  ASSERT_TRUE(host.interface_of("203.0.113.5"));
  EXPECT_EQ(fake.reads, 1) << "no change announced: the cache answers";
  ASSERT_EQ(::write(pipe->second.get(), "x", 1), 1);
  auto found = host.interface_of("203.0.113.5");
  ASSERT_TRUE(found);
  EXPECT_EQ(found->value_or(""), "eth1");
  EXPECT_EQ(fake.reads, 2);
  ASSERT_TRUE(host.interface_of("127.0.0.1"));
  EXPECT_EQ(fake.reads, 2) << "one announcement, one read";
}

TEST(HostAddresses, WithoutAWatchTheAddressesAreReadForEveryQuestion) {
  FakeInterfaces fake;
  HostAddresses host(fake.lister(), UniqueFd());
  fake.now["192.0.2.2"] = "eth0";
  auto found = host.interface_of("192.0.2.2");
  ASSERT_TRUE(found);
  EXPECT_EQ(found->value_or(""), "eth0");
  EXPECT_EQ(fake.reads, 2);
}

TEST(HostAddresses, AddressesThatCannotBeReadAreAnErrorNotAnEmptySet) {
  FakeInterfaces fake;
  fake.broken = true;
  HostAddresses host(fake.lister(), UniqueFd());
  auto found = host.interface_of("192.0.2.2");
  ASSERT_FALSE(found);
  EXPECT_EQ(found.error().code, ENOMEM);
}

// The real watch: in a network namespace of its own (a thread's, so the host is untouched), an
// address given to an interface after the watch began is the host's at the next question,
// with no re-read in between (rtnetlink announced it).
TEST(HostAddresses, AnAddressGivenToAnInterfaceLaterIsSeenThroughRtnetlink) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root for a network namespace of its own";
  std::string failure;
  std::thread in_own_namespace([&] {
    if (::unshare(CLONE_NEWNET) != 0) {
      failure = std::string("unshare(CLONE_NEWNET): ") + std::strerror(errno);
      return;
    }
    HostAddresses host = HostAddresses::watching_interfaces();
    if (!host.is_watching()) {
      failure = "no rtnetlink socket: the addresses would be read for every question";
      return;
    }
    auto before = host.interface_of("10.9.8.7");
    if (!before || before->has_value()) {
      failure = "10.9.8.7 was the namespace's before it was given";
      return;
    }
    UniqueFd s(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    ifreq req{};
    std::strncpy(req.ifr_name, "lo", IFNAMSIZ - 1);
    auto* a = reinterpret_cast<sockaddr_in*>(&req.ifr_addr);
    a->sin_family = AF_INET;
    inet_pton(AF_INET, "10.9.8.7", &a->sin_addr);
    if (::ioctl(s.get(), SIOCSIFADDR, &req) != 0) {
      failure = std::string("SIOCSIFADDR: ") + std::strerror(errno);
      return;
    }
    auto after = host.interface_of("10.9.8.7");
    if (!after || after->value_or("") != "lo") failure = "10.9.8.7 on lo was not seen";
  });
  in_own_namespace.join();
  EXPECT_EQ(failure, "");
}

}  // namespace
}  // namespace moat::sandbox
