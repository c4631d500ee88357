// sessions/jcs.cc: RFC 8785 canonical JSON over nlohmann::json.
#include "sessions/jcs.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string_view>
#include <utility>
#include <vector>

namespace moat::sessions {
namespace {

// Decodes UTF-8 into UTF-16 code units; false on malformed input (overlong forms,
// surrogates and code points past U+10FFFF included).
bool to_utf16(std::string_view s, std::u16string* out) {
  out->clear();
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    uint32_t cp = 0;
    size_t len = 0;
    if (c < 0x80) {
      cp = c;
      len = 1;
    } else if ((c & 0xe0) == 0xc0) {
      cp = c & 0x1f;
      len = 2;
    } else if ((c & 0xf0) == 0xe0) {
      cp = c & 0x0f;
      len = 3;
    } else if ((c & 0xf8) == 0xf0) {
      cp = c & 0x07;
      len = 4;
    } else return false;
    if (i + len > s.size()) return false;
    for (size_t k = 1; k < len; ++k) {
      const unsigned char cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3f);
    }
    static const uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
    if (cp >= 0x10000) {
      cp -= 0x10000;
      out->push_back(static_cast<char16_t>(0xd800 + (cp >> 10)));
      out->push_back(static_cast<char16_t>(0xdc00 + (cp & 0x3ff)));
    } else {
      out->push_back(static_cast<char16_t>(cp));
    }
    i += len;
  }
  return true;
}

Result<void> append_string(std::string_view s, std::string* out) {
  std::u16string scratch;
  if (!to_utf16(s, &scratch)) return fail(Error::msg("canonical_json: invalid UTF-8 in a string"));
  *out += '"';
  for (char ch : s) {
    const unsigned char c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': *out += "\\\""; break;
      case '\\': *out += "\\\\"; break;
      case '\b': *out += "\\b"; break;
      case '\f': *out += "\\f"; break;
      case '\n': *out += "\\n"; break;
      case '\r': *out += "\\r"; break;
      case '\t': *out += "\\t"; break;
      default:
        if (c < 0x20) {
          char esc[8];
          std::snprintf(esc, sizeof esc, "\\u%04x", c);
          *out += esc;
        } else {
          *out += ch;  // everything else, non-ASCII included, is copied as UTF-8
        }
    }
  }
  *out += '"';
  return {};
}

Result<void> append_value(const nlohmann::json& v, std::string* out);

Result<void> append_object(const nlohmann::json& v, std::string* out) {
  // RFC 8785 3.2.3: members sort by UTF-16 code units, which differs from UTF-8 byte order
  // (nlohmann's std::map) for characters above U+FFFF against U+E000..U+FFFF.
  std::vector<std::pair<std::u16string, nlohmann::json::const_iterator>> members;
  members.reserve(v.size());
  for (auto it = v.begin(); it != v.end(); ++it) {
    std::u16string key;
    if (!to_utf16(it.key(), &key))
      return fail(Error::msg("canonical_json: invalid UTF-8 in a key"));
    members.emplace_back(std::move(key), it);
  }
  std::sort(members.begin(), members.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  *out += '{';
  bool first = true;
  for (const auto& [key, it] : members) {
    if (!first) *out += ',';
    first = false;
    MOAT_TRY(append_string(it.key(), out));
    *out += ':';
    MOAT_TRY(append_value(it.value(), out));
  }
  *out += '}';
  return {};
}

Result<void> append_value(const nlohmann::json& v, std::string* out) {
  using T = nlohmann::json::value_t;
  switch (v.type()) {
    case T::null: *out += "null"; return {};
    case T::boolean: *out += v.get<bool>() ? "true" : "false"; return {};
    case T::string: return append_string(v.get_ref<const std::string&>(), out);
    case T::object: return append_object(v, out);
    case T::array: {
      *out += '[';
      for (size_t i = 0; i < v.size(); ++i) {
        if (i > 0) *out += ',';
        MOAT_TRY(append_value(v[i], out));
      }
      *out += ']';
      return {};
    }
    case T::number_integer: {
      const int64_t n = v.get<int64_t>();
      // JSON numbers are IEEE doubles in JCS: integers beyond 2^53 print as doubles do.
      if (n >= -(int64_t{1} << 53) && n <= (int64_t{1} << 53)) *out += std::to_string(n);
      else *out += es_number(static_cast<double>(n));
      return {};
    }
    case T::number_unsigned: {
      const uint64_t n = v.get<uint64_t>();
      if (n <= (uint64_t{1} << 53)) *out += std::to_string(n);
      else *out += es_number(static_cast<double>(n));
      return {};
    }
    case T::number_float: {
      const double d = v.get<double>();
      if (!std::isfinite(d)) return fail(Error::msg("canonical_json: NaN or infinity"));
      *out += es_number(d);
      return {};
    }
    default: return fail(Error::msg("canonical_json: binary or discarded value"));
  }
}

}  // namespace

bool is_utf8(std::string_view s) {
  std::u16string scratch;
  return to_utf16(s, &scratch);
}

std::string es_number(double v) {
  if (v == 0) return "0";  // -0 prints as 0 too
  std::string sign = v < 0 ? "-" : "";
  // Shortest round-trip digits in scientific form: "d.ddde+XX".
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, std::fabs(v), std::chars_format::scientific);
  std::string_view sci(buf, static_cast<size_t>(res.ptr - buf));
  const size_t e = sci.find('e');
  std::string digits;
  for (char c : sci.substr(0, e))
    if (c != '.') digits += c;
  const int exp10 = std::stoi(std::string(sci.substr(e + 1)));
  const int k = static_cast<int>(digits.size());
  const int n = exp10 + 1;  // ECMA-262 Number::toString's n: value = 0.digits * 10^n
  if (k <= n && n <= 21) return sign + digits + std::string(static_cast<size_t>(n - k), '0');
  if (0 < n && n <= 21)
    return sign + digits.substr(0, static_cast<size_t>(n)) + "." +
           digits.substr(static_cast<size_t>(n));
  if (-6 < n && n <= 0) return sign + "0." + std::string(static_cast<size_t>(-n), '0') + digits;
  std::string mant = digits.substr(0, 1);
  if (k > 1) mant += "." + digits.substr(1);
  return sign + mant + "e" + (n - 1 >= 0 ? "+" : "-") + std::to_string(std::abs(n - 1));
}

Result<std::string> canonical_json(const nlohmann::json& value) {
  std::string out;
  MOAT_TRY(append_value(value, &out));
  return out;
}

}  // namespace moat::sessions
