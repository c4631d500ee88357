// sandbox/net_host_addresses.cc: the host's interface addresses, cached until rtnetlink says
// they changed (see net_host_addresses.h).
#include "sandbox/net_host_addresses.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <unistd.h>

#include <cerrno>

#include "base/sys.h"

namespace moat::sandbox {
namespace {

// A socket that becomes readable whenever an address is added to or removed from any
// interface of moatd's network namespace (the host's: the proxy connects from there).
Result<UniqueFd> address_change_socket() {
  MOAT_ASSIGN_OR_RETURN(UniqueFd fd, sys::make_socket(AF_NETLINK, SOCK_RAW | SOCK_NONBLOCK));
  sockaddr_nl nl{};
  nl.nl_family = AF_NETLINK;
  nl.nl_groups = RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR;
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&nl), sizeof nl) != 0)
    return fail(Error::from_errno("bind", errno, "NETLINK_ROUTE address changes"));
  return fd;
}

}  // namespace

Result<AddressMap> list_interface_addresses() {
  ifaddrs* all = nullptr;
  if (::getifaddrs(&all) != 0) return fail(Error::from_errno("getifaddrs", errno));
  AddressMap out;
  for (const ifaddrs* i = all; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr) continue;
    const int family = i->ifa_addr->sa_family;
    const void* src = nullptr;
    if (family == AF_INET) src = &reinterpret_cast<const sockaddr_in*>(i->ifa_addr)->sin_addr;
    if (family == AF_INET6) src = &reinterpret_cast<const sockaddr_in6*>(i->ifa_addr)->sin6_addr;
    char text[INET6_ADDRSTRLEN] = {};
    // inet_ntop writes the canonical forms policy::normalize_host compares with.
    if (src != nullptr && inet_ntop(family, src, text, sizeof text) != nullptr)
      out.emplace(text, i->ifa_name != nullptr ? i->ifa_name : "");
  }
  ::freeifaddrs(all);
  return out;
}

HostAddresses HostAddresses::watching_interfaces() {
  auto changes = address_change_socket();
  return HostAddresses(list_interface_addresses,
                       changes ? std::move(*changes) : UniqueFd());  // none: read every time
}

HostAddresses::HostAddresses(AddressLister list, UniqueFd changes)
    : list_(std::move(list)), changes_(std::move(changes)) {
  if (auto first = list_(); first) cached_ = std::move(*first);  // as the session starts
}

bool HostAddresses::drain_changes() {
  bool changed = false;
  char buf[8192];
  for (;;) {
    const ssize_t n = ::read(changes_.get(), buf, sizeof buf);  // non-blocking: EAGAIN when drained
    if (n > 0) {
      changed = true;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    // ENOBUFS: the kernel dropped notifications it could not queue, so something changed.
    return changed || (n < 0 && errno == ENOBUFS);
  }
}

Result<std::optional<std::string>> HostAddresses::interface_of(const std::string& ip) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!changes_.valid() || drain_changes()) cached_.reset();
  if (!cached_) {
    MOAT_ASSIGN_OR_RETURN(AddressMap now, list_());
    cached_ = std::move(now);
  }
  const auto it = cached_->find(ip);
  if (it == cached_->end()) return std::optional<std::string>();
  return std::optional<std::string>(it->second);
}

}  // namespace moat::sandbox
