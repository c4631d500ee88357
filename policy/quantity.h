// policy/quantity.h: durations and sizes as policies and manifests write them ("10m", "4GiB");
// below the TOML reader (TomlReader::quantity) and the policy loader.
#pragma once

#include <cstdint>
#include <string_view>

#include "base/result.h"

namespace moat::policy {

// "10m" / 90 / "1h30m" style durations in seconds; "4GiB" / 1024 style sizes in bytes.
Result<std::int64_t> parse_duration_seconds(std::string_view text);
Result<std::int64_t> parse_size_bytes(std::string_view text);

}  // namespace moat::policy
