// sandbox/random_id.h: moatd's random ids (session, decision, ask, console token), in one
// place until base/ has the one helper every folder uses.
#pragma once

#include <sys/random.h>

#include <cstddef>
#include <string>
#include <vector>

namespace moat::sandbox {

inline std::string random_hex_or_abort(std::size_t bytes) {
  std::vector<unsigned char> buf(bytes);
  std::size_t got = 0;
  while (got < bytes) {
    ssize_t n = getrandom(buf.data() + got, bytes - got, 0);
    if (n > 0) got += static_cast<std::size_t>(n);
  }
  static const char* const kHex = "0123456789abcdef";
  std::string out;
  for (unsigned char c : buf) {
    out += kHex[c >> 4];
    out += kHex[c & 15];
  }
  return out;
}

}  // namespace moat::sandbox
