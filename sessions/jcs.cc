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

// The code point that starts at s[*i], *i moved past it; false on malformed input (overlong
// forms, surrogates and code points past U+10FFFF included).
bool next_code_point(std::string_view s, size_t* i, uint32_t* out) {
  const unsigned char c = static_cast<unsigned char>(s[*i]);
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
  if (*i + len > s.size()) return false;
  for (size_t k = 1; k < len; ++k) {
    const unsigned char cc = static_cast<unsigned char>(s[*i + k]);
    if ((cc & 0xc0) != 0x80) return false;
    cp = (cp << 6) | (cc & 0x3f);
  }
  static const uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
  *i += len;
  *out = cp;
  return true;
}

// Decodes UTF-8 into UTF-16 code units; false on malformed input.
bool to_utf16(std::string_view s, std::u16string* out) {
  out->clear();
  for (size_t i = 0; i < s.size();) {
    uint32_t cp = 0;
    if (!next_code_point(s, &i, &cp)) return false;
    if (cp >= 0x10000) {
      cp -= 0x10000;
      out->push_back(static_cast<char16_t>(0xd800 + (cp >> 10)));
      out->push_back(static_cast<char16_t>(0xdc00 + (cp & 0x3ff)));
    } else {
      out->push_back(static_cast<char16_t>(cp));
    }
  }
  return true;
}

// Well-formed UTF-8, checked without decoding into a buffer (every string of every audit
// record passes here): ASCII, most of them, in one scan.
bool valid_utf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size() && static_cast<unsigned char>(s[i]) < 0x80) ++i;
  uint32_t cp = 0;
  while (i < s.size())
    if (!next_code_point(s, &i, &cp)) return false;
  return true;
}

// Whether `s` holds a character past U+FFFF (a 4-byte sequence): the only characters whose
// UTF-16 order differs from their UTF-8 byte order (they sort below U+E000..U+FFFF in UTF-16).
bool has_supplementary(std::string_view s) {
  for (char c : s)
    if (static_cast<unsigned char>(c) >= 0xf0) return true;
  return false;
}

// The escape JSON needs for byte `c` ("" when it is copied as it is).
std::string_view escape_of(unsigned char c, char (&buf)[8]) {
  switch (c) {
    case '"': return "\\\"";
    case '\\': return "\\\\";
    case '\b': return "\\b";
    case '\f': return "\\f";
    case '\n': return "\\n";
    case '\r': return "\\r";
    case '\t': return "\\t";
    default:
      if (c >= 0x20) return {};
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      return buf;
  }
}

Result<void> append_string(std::string_view s, std::string* out) {
  if (!valid_utf8(s)) return fail(Error::msg("canonical_json: invalid UTF-8 in a string"));
  *out += '"';
  size_t run = 0;  // the start of the bytes copied as they are (non-ASCII included, as UTF-8)
  char buf[8];
  for (size_t i = 0; i < s.size(); ++i) {
    const std::string_view esc = escape_of(static_cast<unsigned char>(s[i]), buf);
    if (esc.empty()) continue;
    out->append(s.data() + run, i - run);
    out->append(esc);
    run = i + 1;
  }
  out->append(s.data() + run, s.size() - run);
  *out += '"';
  return {};
}

Result<void> append_value(const nlohmann::json& v, std::string* out);

// Where a member `key` the object does not hold goes in its canonical form (canonical_object).
struct Insertion {
  std::string_view key;
  std::u16string key16;
  size_t at = std::string::npos;  // set by append_members: the byte offset in the output
  bool after_member = false;      // a member precedes it: it goes in as ",key:value"
  bool before_member = false;     // a member follows it
};

// The members in `order` (an object's items, or iterators into it), in that order; with
// `insertion`, notes where its key falls: before the first member whose key sorts after it.
template <typename Members, typename SortsAfter>
Result<void> append_members(const Members& order, SortsAfter sorts_after, std::string* out,
                            Insertion* insertion) {
  *out += '{';
  bool first = true;
  for (const auto& m : order) {
    if (insertion != nullptr && insertion->at == std::string::npos && sorts_after(m)) {
      insertion->at = out->size();
      insertion->after_member = !first;
      insertion->before_member = true;
    }
    if (!first) *out += ',';
    first = false;
    MOAT_TRY(append_string(m.key(), out));
    *out += ':';
    MOAT_TRY(append_value(m.value(), out));
  }
  if (insertion != nullptr && insertion->at == std::string::npos) {
    insertion->at = out->size();
    insertion->after_member = !first;
  }
  *out += '}';
  return {};
}

Result<void> append_object(const nlohmann::json& v, std::string* out,
                           Insertion* insertion = nullptr) {
  using It = nlohmann::json::const_iterator;
  // RFC 8785 3.2.3: members sort by UTF-16 code units. nlohmann's std::map holds them in UTF-8
  // byte order, which is the same order unless a key has a character above U+FFFF (sorted in
  // UTF-16 below U+E000..U+FFFF): only then are the keys converted and sorted.
  bool supplementary = insertion != nullptr && has_supplementary(insertion->key);
  for (It it = v.begin(); it != v.end(); ++it) {
    if (!valid_utf8(it.key())) return fail(Error::msg("canonical_json: invalid UTF-8 in a key"));
    supplementary = supplementary || has_supplementary(it.key());
  }
  if (!supplementary)
    return append_members(
        v.items(), [&](const auto& m) { return m.key() > insertion->key; }, out, insertion);
  std::vector<std::pair<std::u16string, It>> members;
  members.reserve(v.size());
  for (It it = v.begin(); it != v.end(); ++it) {
    std::u16string key;
    (void)to_utf16(it.key(), &key);  // checked above
    members.emplace_back(std::move(key), it);
  }
  std::sort(members.begin(), members.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<It> order;
  order.reserve(members.size());
  for (const auto& m : members) order.push_back(m.second);
  if (insertion != nullptr) (void)to_utf16(insertion->key, &insertion->key16);
  size_t k = 0;  // members[k] is the one append_members is at
  return append_members(
      order, [&](const It&) { return members[k++].first > insertion->key16; }, out, insertion);
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

bool is_utf8(std::string_view s) { return valid_utf8(s); }

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

Result<CanonicalObject> canonical_object(const nlohmann::json& object, std::string_view key) {
  if (!object.is_object()) return fail(Error::msg("canonical_object: not an object"));
  if (object.contains(key)) return fail(Error::msg("canonical_object: the member is there already"));
  if (!valid_utf8(key)) return fail(Error::msg("canonical_json: invalid UTF-8 in a key"));
  Insertion insertion;
  insertion.key = key;
  CanonicalObject out;
  MOAT_TRY(append_object(object, &out.text, &insertion));
  out.key = std::string(key);
  out.at = insertion.at;
  out.after_member = insertion.after_member;
  out.before_member = insertion.before_member;
  return out;
}

Result<std::string> CanonicalObject::with_member(const nlohmann::json& value) const {
  std::string member = after_member ? "," : "";
  MOAT_TRY(append_string(key, &member));
  member += ':';
  MOAT_TRY(append_value(value, &member));
  if (!after_member && before_member) member += ',';
  std::string out;
  out.reserve(text.size() + member.size());
  out.append(text, 0, at).append(member).append(text, at, std::string::npos);
  return out;
}

}  // namespace moat::sessions
