// tests/fuzz/audit_canonical_fuzz.cc: libFuzzer target for the audit log's canonical form
// (sessions/jcs.cc). A record is hashed without its "hash" member and written with it from one
// canonical form (canonical_object, issue 30); `moat audit verify` recomputes both from the
// line it reads. Any record content (a hostile file name, an environment, keys that sort around
// "hash", characters past U+FFFF, invalid UTF-8) must give the line and hash the old two-pass
// path gave, and the line must verify. The old path is kept here as the reference: RFC 8785 by
// decoding every string into UTF-16 and sorting every object's members by it.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "sessions/jcs.h"

namespace {

using nlohmann::json;

// ---- The reference: canonical_json as it was before canonical_object (f886194^). ----

bool ref_to_utf16(std::string_view s, std::u16string* out) {
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

bool ref_string(std::string_view s, std::string* out) {
  std::u16string scratch;
  if (!ref_to_utf16(s, &scratch)) return false;
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
          *out += ch;
        }
    }
  }
  *out += '"';
  return true;
}

bool ref_value(const json& v, std::string* out) {
  using T = json::value_t;
  switch (v.type()) {
    case T::null: *out += "null"; return true;
    case T::boolean: *out += v.get<bool>() ? "true" : "false"; return true;
    case T::string: return ref_string(v.get_ref<const std::string&>(), out);
    case T::object: {
      std::vector<std::pair<std::u16string, json::const_iterator>> members;
      for (auto it = v.begin(); it != v.end(); ++it) {
        std::u16string key;
        if (!ref_to_utf16(it.key(), &key)) return false;
        members.emplace_back(std::move(key), it);
      }
      std::sort(members.begin(), members.end(),
                [](const auto& a, const auto& b) { return a.first < b.first; });
      *out += '{';
      bool first = true;
      for (const auto& [key, it] : members) {
        if (!first) *out += ',';
        first = false;
        if (!ref_string(it.key(), out)) return false;
        *out += ':';
        if (!ref_value(it.value(), out)) return false;
      }
      *out += '}';
      return true;
    }
    case T::array: {
      *out += '[';
      for (size_t i = 0; i < v.size(); ++i) {
        if (i > 0) *out += ',';
        if (!ref_value(v[i], out)) return false;
      }
      *out += ']';
      return true;
    }
    case T::number_integer: {
      const int64_t n = v.get<int64_t>();
      if (n >= -(int64_t{1} << 53) && n <= (int64_t{1} << 53)) *out += std::to_string(n);
      else *out += moat::sessions::es_number(static_cast<double>(n));
      return true;
    }
    case T::number_unsigned: {
      const uint64_t n = v.get<uint64_t>();
      if (n <= (uint64_t{1} << 53)) *out += std::to_string(n);
      else *out += moat::sessions::es_number(static_cast<double>(n));
      return true;
    }
    case T::number_float: {
      const double d = v.get<double>();
      if (!std::isfinite(d)) return false;
      *out += moat::sessions::es_number(d);
      return true;
    }
    default: return false;
  }
}

std::optional<std::string> reference(const json& v) {
  std::string out;
  if (!ref_value(v, &out)) return std::nullopt;
  return out;
}

// ---- A record from the fuzzer's bytes. ----

// Keys that sort next to "hash" in UTF-8 and in UTF-16 order, and the characters where the two
// orders differ (U+E000..U+FFFF against past U+FFFF).
const char* const kKeys[] = {"hash",
                             "has",
                             "hasg",
                             "hasi",
                             "hash0",
                             "hash\x01",
                             "hasH",
                             "h",
                             "",
                             "v",
                             "seq",
                             "prev",
                             "\xef\xac\xb2",
                             "\xef\xbf\xbf",
                             "\xee\x80\x80",
                             "\xf0\x9f\x98\x81",
                             "\xf4\x8f\xbf\xbf",
                             "\xc3\xb6",
                             "\xed\x9f\xbf",
                             "h\xf0\x9f\x98\x81"};

struct Bytes {
  const uint8_t* p;
  size_t n;
  uint8_t byte() {
    if (n == 0) return 0;
    --n;
    return *p++;
  }
  std::string raw(size_t len) {
    len = std::min(len, n);
    std::string s(reinterpret_cast<const char*>(p), len);
    p += len;
    n -= len;
    return s;
  }
};

std::string text_of(Bytes& in) {
  const uint8_t c = in.byte();
  if (c < 96) return kKeys[c % (sizeof kKeys / sizeof kKeys[0])];
  return in.raw(c % 16);  // any bytes: invalid UTF-8, controls, quotes, surrogates' encodings
}

json value_of(Bytes& in, int depth) {
  const uint8_t c = in.byte();
  switch (depth >= 4 ? c % 6 : c % 8) {
    case 0: return nullptr;
    case 1: return (c & 8) != 0;
    case 2: {
      int64_t v = 0;
      std::string b = in.raw(8);
      std::memcpy(&v, b.data(), b.size());
      return v;
    }
    case 3: {
      uint64_t v = 0;
      std::string b = in.raw(8);
      std::memcpy(&v, b.data(), b.size());
      return v;
    }
    case 4: {
      double v = 0;
      std::string b = in.raw(8);
      std::memcpy(&v, b.data(), b.size());
      return v;  // NaN and infinity included: both paths must refuse them
    }
    case 5: return text_of(in);
    case 6: {
      json a = json::array();
      for (int i = in.byte() % 5; i > 0; --i) a.push_back(value_of(in, depth + 1));
      return a;
    }
    default: {
      json o = json::object();
      for (int i = in.byte() % 7; i > 0; --i) o[text_of(in)] = value_of(in, depth + 1);
      return o;
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Bytes in{data, size};
  json record = json::object();
  for (int i = in.byte() % 12; i > 0; --i) record[text_of(in)] = value_of(in, 1);
  const std::string hash = in.byte() % 4 == 0 ? text_of(in) : "sha256:00ff";

  // canonical_json is the reference on any value.
  const auto ref = reference(record);
  const auto canon = moat::sessions::canonical_json(record);
  if (ref.has_value() != canon.has_value() || (ref && *ref != *canon)) std::abort();

  // canonical_object: the record's form and the line with "hash" put in, as the old path made
  // them (the record without it, then the record with it).
  auto object = moat::sessions::canonical_object(record, "hash");
  if (record.contains("hash")) {
    if (object) std::abort();
    return 0;
  }
  if (object.has_value() != ref.has_value()) std::abort();
  if (!object) return 0;
  if (object->text != *ref) std::abort();
  json with = record;
  with["hash"] = hash;
  const auto ref_line = reference(with);
  const auto line = object->with_member(hash);
  if (line.has_value() != ref_line.has_value() || (line && *line != *ref_line)) std::abort();
  if (!line) return 0;

  // What `moat audit verify` does with the line: parse it, hash it without "hash", and hold it
  // to its canonical form.
  json read = json::parse(*line, nullptr, false);
  if (read.is_discarded() || !read.is_object() || read.value("hash", json()) != hash) std::abort();
  const auto reread = moat::sessions::canonical_json(read);
  if (!reread || *reread != *line) std::abort();
  read.erase("hash");
  const auto rehashed = moat::sessions::canonical_json(read);
  if (!rehashed || *rehashed != object->text) std::abort();
  return 0;
}
