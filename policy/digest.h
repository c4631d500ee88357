// policy/digest.h: SHA-256 as lowercase hex, for layer pins, program pins and policy_hash.
#pragma once

#include <string>
#include <string_view>

#include "base/result.h"

namespace moat::policy {

std::string sha256_hex(std::string_view bytes);
// Reads the whole file; a file larger than `max_bytes` fails with EFBIG.
Result<std::string> sha256_file_hex(const std::string& path, std::size_t max_bytes = 1u << 30);

}  // namespace moat::policy
