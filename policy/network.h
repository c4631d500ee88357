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

// Whether an address (an IP literal, normalised) is one a name must never lead to unless a
// rule names it: loopback, private (RFC 1918, RFC 4193), link-local, carrier-grade NAT,
// unspecified, multicast, reserved, and the IPv4-mapped and NAT64 forms of those.
bool is_internal_address(const std::string& ip);

// Whether a `domains` entry covers `host` (both normalised).
// "*.x" covers every name below x, never x itself; an IP literal is covered only by the same
// literal, never by a glob.
bool domain_matches(const std::string& pattern, const std::string& host);

}  // namespace moat::policy
