// policy/network.h: what a [[network]] rule's `domains` entry matches, and which addresses are
// reached only when a rule names them.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace moat::policy {

// A host as the proxy judges it: lower case, without a trailing dot, an IPv6 literal without
// its brackets and in its canonical text form. nullopt for anything that is not a DNS name
// (letters, digits, '-', '_', dots; labels of 1 to 63 bytes; at most 253 bytes) or an IP
// literal: a host the resolver might read differently from the policy is never judged.
std::optional<std::string> normalize_host(std::string_view host);

// A `domains` entry as rules keep it: a host normalised as above, or "*." and such a name.
// nullopt for anything else ("*", "a.*.b", "*.1.2.3.4"), which the loader refuses.
std::optional<std::string> normalize_domain_pattern(std::string_view pattern);

// Whether `host` (normalised) is an IPv4 or IPv6 literal.
bool is_ip_literal(const std::string& host);

// Why an address (an IP literal, normalised) is one a name must never lead to unless a rule
// names it, or nullptr when it is a global address: every range of the IANA IPv4 and IPv6
// special-purpose registries (loopback, private, shared, link-local, documentation,
// benchmarking, protocol assignments, anycast), multicast, reserved, IPv6 outside 2000::/3,
// and the IPv4-mapped, NAT64 (64:ff9b::/96) and 6to4 forms of an internal IPv4 address. The
// host's own interface addresses are the proxy's to add (sandbox/net_host_addresses.h).
const char* internal_address_reason(const std::string& ip);
bool is_internal_address(const std::string& ip);

// Whether a `domains` entry covers `host` (both normalised).
// "*.x" covers every name below x, never x itself; an IP literal is covered only by the same
// literal, never by a glob.
bool domain_matches(const std::string& pattern, const std::string& host);

}  // namespace moat::policy
