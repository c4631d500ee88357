// tests/fuzz/policy_toml_fuzz.cc: libFuzzer target for the policy loader. Any input must
// either parse or fail with an error that names fuzz.toml:line:col; a crash, a sanitizer
// report or an error without a position is a finding.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "policy/toml_load.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  moat::policy::ParseOptions options;
  options.file = "fuzz.toml";
  for (bool strict : {true, false}) {
    options.unknown_keys_are_errors = strict;
    auto parsed = moat::policy::parse_policy_text(text, options, nullptr);
    if (parsed) continue;
    const std::string& msg = parsed.error().context;
    // "fuzz.toml:<line>:<col>: ..."
    std::size_t i = std::string_view("fuzz.toml:").size();
    if (msg.compare(0, i, "fuzz.toml:") != 0) std::abort();
    for (int part = 0; part < 2; ++part) {
      std::size_t start = i;
      while (i < msg.size() && msg[i] >= '0' && msg[i] <= '9') ++i;
      if (i == start || i >= msg.size() || msg[i] != ':') std::abort();
      ++i;
    }
  }
  return 0;
}
