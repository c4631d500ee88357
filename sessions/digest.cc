// sessions/digest.cc: SHA-256 through OpenSSL's libcrypto (EVP, the non-deprecated API).
#include "sessions/digest.h"

#include <openssl/evp.h>

#include "base/check.h"

namespace moat::sessions {

std::string sha256_hex(std::string_view data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  // EVP_Digest fails only on allocation failure inside libcrypto; an audit chain without
  // hashes is worthless, so that is treated as a broken host.
  MOAT_CHECK(EVP_Digest(data.data(), data.size(), md, &len, EVP_sha256(), nullptr) == 1);
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * len);
  for (unsigned int i = 0; i < len; ++i) {
    out += kHex[md[i] >> 4];
    out += kHex[md[i] & 0x0f];
  }
  return out;
}

}  // namespace moat::sessions
