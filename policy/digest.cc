// policy/digest.cc: SHA-256 through OpenSSL's EVP interface.
#include "policy/digest.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <unistd.h>

#include <memory>

#include "base/hex.h"
#include "base/sys.h"
#include "base/unique_fd.h"

namespace moat::policy {
namespace {

struct MdCtxFree {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};

// SHA-256 fetched from the default provider once: with EVP_sha256(), OpenSSL 3 fetches the
// method again at every digest (its method store's lookups and locks), a few times each hello
// (the policy's hash, its files'). Never freed; null only if the provider has none, and then
// EVP_sha256() is used as before.
const EVP_MD* sha256_md() {
  static const EVP_MD* const md = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  return md != nullptr ? md : EVP_sha256();
}

}  // namespace

std::string sha256_hex(std::string_view bytes) {
  unsigned char d[EVP_MAX_MD_SIZE];
  unsigned n = 0;
  EVP_Digest(bytes.data(), bytes.size(), d, &n, sha256_md(), nullptr);
  return hex_encode(d, n);
}

Result<std::string> sha256_file_hex(const std::string& path, std::size_t max_bytes) {
  MOAT_ASSIGN_OR_RETURN(UniqueFd fd, sys::open_path(path, O_RDONLY | O_NOCTTY));
  std::unique_ptr<EVP_MD_CTX, MdCtxFree> ctx(EVP_MD_CTX_new());
  EVP_DigestInit_ex(ctx.get(), sha256_md(), nullptr);
  char buf[65536];
  std::size_t total = 0;
  while (true) {
    ssize_t r = ::read(fd.get(), buf, sizeof buf);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return fail(Error::from_errno("read", errno, path));
    if (r == 0) break;
    total += static_cast<std::size_t>(r);
    if (total > max_bytes) return fail(Error::from_errno("read", EFBIG, path));
    EVP_DigestUpdate(ctx.get(), buf, static_cast<std::size_t>(r));
  }
  unsigned char d[EVP_MAX_MD_SIZE];
  unsigned n = 0;
  EVP_DigestFinal_ex(ctx.get(), d, &n);
  return hex_encode(d, n);
}

}  // namespace moat::policy
