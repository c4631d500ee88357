// tests/fuzz/shell_parse_fuzz.cc: libFuzzer target for the shell parser and the command
// planner (wrapper unwrapping, flag normalisation), which see model-written text.
#include <cstdint>
#include <string>
#include <string_view>

#include "policy/shell_parse.h"
#include "policy/units.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto parsed = moat::policy::parse_shell(text);
  for (const auto& c : parsed.commands)
    for (const auto& w : c.words) (void)w.literal();
  auto plan = moat::policy::plan_line(text, "/nonexistent/ws", "/nonexistent/home");
  for (const auto& u : plan.units) (void)u.argv_text();
  return 0;
}
