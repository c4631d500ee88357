// sessions/digest.cc: SHA-256 through OpenSSL's libcrypto (EVP, the non-deprecated API).
#include "sessions/digest.h"

#include <openssl/evp.h>

#include "base/check.h"
#include "base/hex.h"

namespace moat::sessions {
namespace {

// SHA-256 fetched from the default provider once: EVP_sha256() hands EVP_Digest a legacy
// method that OpenSSL 3 fetches again at every call (its method store's lookups and locks),
// six audit records a command and more (issue 30 point 4). Never freed: it lives as long as
// moatd. Null only if the provider has none, and then EVP_sha256() is used as before.
const EVP_MD* sha256_md() {
  static const EVP_MD* const md = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  return md != nullptr ? md : EVP_sha256();
}

}  // namespace

std::string sha256_hex(std::string_view data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  // EVP_Digest fails only on allocation failure inside libcrypto; an audit chain without
  // hashes is worthless, so that is treated as a broken host.
  MOAT_CHECK(EVP_Digest(data.data(), data.size(), md, &len, sha256_md(), nullptr) == 1);
  return hex_encode(md, len);
}

}  // namespace moat::sessions
