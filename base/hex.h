// base/hex.h: bytes as lowercase hexadecimal (digests, random ids), written once.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace moat {

// "0a1b..." for {0x0a, 0x1b, ...}: two lowercase digits per byte, most significant first.
inline std::string hex_encode(const unsigned char* data, std::size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * n);
  for (std::size_t i = 0; i < n; ++i) {
    out += kDigits[data[i] >> 4];
    out += kDigits[data[i] & 0x0f];
  }
  return out;
}

inline std::string hex_encode(std::string_view bytes) {
  return hex_encode(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
}

}  // namespace moat
