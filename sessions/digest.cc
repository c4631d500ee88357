// sessions/digest.cc: SHA-256 through OpenSSL's libcrypto (EVP, the non-deprecated API).
#include "sessions/digest.h"

#include <openssl/evp.h>

#include "base/check.h"
#include "base/hex.h"

namespace moat::sessions {

std::string sha256_hex(std::string_view data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  // EVP_Digest fails only on allocation failure inside libcrypto; an audit chain without
  // hashes is worthless, so that is treated as a broken host.
  MOAT_CHECK(EVP_Digest(data.data(), data.size(), md, &len, EVP_sha256(), nullptr) == 1);
  return hex_encode(md, len);
}

}  // namespace moat::sessions
