// tests/unit/sandbox/net_host_addresses_test.cc: the host's own addresses as the proxy sees them:
// read at the start, read again only after a change is announced, and a failed read refuses.
#include "sandbox/net_host_addresses.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

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

}  // namespace
}  // namespace moat::sandbox
