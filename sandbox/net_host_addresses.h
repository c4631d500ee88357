// sandbox/net_host_addresses.h: the host's own interface addresses, which the proxy never lets
// a name lead to (issue 26 item 9): a host service bound to 0.0.0.0 answers on every one of
// them, whatever range the address is in.
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "base/result.h"
#include "base/unique_fd.h"

namespace moat::sandbox {

// Address (normalised text, as policy::normalize_host writes it) -> the interface holding it.
using AddressMap = std::map<std::string, std::string>;
using AddressLister = std::function<Result<AddressMap>()>;

// Every address of the host's interfaces, read with getifaddrs(3).
Result<AddressMap> list_interface_addresses();

class HostAddresses {
 public:
  // Reads the host's addresses now and re-reads them only after a change: a NETLINK_ROUTE
  // socket subscribed to address changes (rtnetlink(7), RTMGRP_IPV4_IFADDR and _IPV6_IFADDR),
  // bound before the first read so that no change falls between them. When that socket cannot
  // be made, the addresses are read again for every question.
  static HostAddresses watching_interfaces();

  // `changes` (non-blocking): readable when the addresses may have changed (each question
  // drains it); an invalid fd re-reads on every question. For tests: a pipe and a fake lister.
  HostAddresses(AddressLister list, UniqueFd changes);

  // The interface holding `ip` (normalised), nullopt when no interface of the host holds it,
  // or an error when the addresses cannot be read (the caller refuses: fail closed).
  Result<std::optional<std::string>> interface_of(const std::string& ip);

  // Whether changes are announced (false: the addresses are read for every question).
  bool is_watching() const { return changes_.valid(); }

 private:
  bool drain_changes();  // true when a change was announced (or the queue overflowed)

  AddressLister list_;
  UniqueFd changes_;
  std::mutex mu_;
  std::optional<AddressMap> cached_;  // guarded by mu_; nullopt: read on the next question
};

}  // namespace moat::sandbox
