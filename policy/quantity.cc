// policy/quantity.cc: durations and sizes as policies and manifests write them.
#include "policy/quantity.h"

#include <cctype>
#include <optional>

namespace moat::policy {
namespace {

// Splits "1h30m" into (number, unit) pairs and sums them with `unit_value`.
template <typename UnitFn>
Result<std::int64_t> sum_units(std::string_view text, UnitFn unit_value) {
  if (text.empty()) return fail("empty quantity");
  std::int64_t total = 0;
  std::size_t i = 0;
  while (i < text.size()) {
    std::int64_t number = 0;
    std::size_t start = i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
      if (number > (std::int64_t{1} << 40)) return fail("quantity too large");
      number = number * 10 + (text[i++] - '0');
    }
    if (i == start) return fail("expected a number");
    std::size_t unit_start = i;
    while (i < text.size() && std::isalpha(static_cast<unsigned char>(text[i]))) ++i;
    auto unit = unit_value(text.substr(unit_start, i - unit_start));
    if (!unit) return fail("unknown unit");
    if (*unit != 0 && number > (std::int64_t{1} << 62) / *unit) return fail("quantity too large");
    total += number * *unit;
    if (total > (std::int64_t{1} << 62)) return fail("quantity too large");
  }
  if (total <= 0) return fail("quantity must be positive");
  return total;
}

}  // namespace

Result<std::int64_t> parse_duration_seconds(std::string_view text) {
  return sum_units(text, [](std::string_view u) -> std::optional<std::int64_t> {
    if (u.empty() || u == "s") return 1;
    if (u == "m") return 60;
    if (u == "h") return 3600;
    if (u == "d") return 86400;
    return std::nullopt;
  });
}

Result<std::int64_t> parse_size_bytes(std::string_view text) {
  return sum_units(text, [](std::string_view u) -> std::optional<std::int64_t> {
    if (u.empty() || u == "B") return 1;
    if (u == "KiB" || u == "K") return std::int64_t{1} << 10;
    if (u == "MiB" || u == "M") return std::int64_t{1} << 20;
    if (u == "GiB" || u == "G") return std::int64_t{1} << 30;
    if (u == "TiB" || u == "T") return std::int64_t{1} << 40;
    if (u == "KB") return 1000;
    if (u == "MB") return 1000 * 1000;
    if (u == "GB") return std::int64_t{1000} * 1000 * 1000;
    return std::nullopt;
  });
}

}  // namespace moat::policy
