// sessions/digest.h: SHA-256 through OpenSSL's libcrypto.
#pragma once

#include <string>
#include <string_view>

namespace moat::sessions {

// Lowercase hex SHA-256 of `data` (64 characters).
std::string sha256_hex(std::string_view data);

}  // namespace moat::sessions
