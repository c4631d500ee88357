// sessions/audit_key.cc: Ed25519 through OpenSSL's EVP API.
#include "sessions/audit_key.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "base/base64.h"
#include "base/sys.h"
#include "sessions/digest.h"
#include "sessions/jsonl.h"

namespace moat::sessions {
namespace {

constexpr std::size_t kRawKeySize = 32;

EVP_PKEY* as_pkey(void* p) { return static_cast<EVP_PKEY*>(p); }

std::string raw_public(EVP_PKEY* pkey) {
  unsigned char raw[kRawKeySize];
  std::size_t len = sizeof raw;
  if (EVP_PKEY_get_raw_public_key(pkey, raw, &len) != 1) return "";
  return std::string(reinterpret_cast<const char*>(raw), len);
}

Result<void> write_public(EVP_PKEY* pkey, const std::string& path) {
  const std::string pub = audit_public_key_path(path);
  const std::string tmp = pub + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "we");
  if (f == nullptr) return fail(Error::from_errno("open", errno, tmp));
  const bool ok = PEM_write_PUBKEY(f, pkey) == 1;
  if (std::fclose(f) != 0 || !ok) {
    ::unlink(tmp.c_str());
    return fail(Error::msg("audit key: could not write the public key " + pub));
  }
  if (::rename(tmp.c_str(), pub.c_str()) != 0) return fail(Error::from_errno("rename", errno, pub));
  return {};
}

Result<EVP_PKEY*> create_key(const std::string& path) {
  EVP_PKEY* pkey = EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519");
  if (pkey == nullptr) return fail(Error::msg("audit key: Ed25519 key generation failed"));
  // O_EXCL: two moatds starting at once must not both write a key; the loser loads it.
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    EVP_PKEY_free(pkey);
    return fail(Error::from_errno("create audit key", errno, path));
  }
  FILE* f = ::fdopen(fd, "w");
  bool ok =
      f != nullptr && PEM_write_PrivateKey(f, pkey, nullptr, nullptr, 0, nullptr, nullptr) == 1;
  ok = ok && std::fflush(f) == 0 && ::fsync(fd) == 0;
  if (f != nullptr) std::fclose(f);
  else ::close(fd);
  if (!ok) {
    ::unlink(path.c_str());
    EVP_PKEY_free(pkey);
    return fail(Error::msg("audit key: could not write " + path));
  }
  return pkey;
}

// The private key file as create_key writes it: PEM_write_PrivateKey of an Ed25519 key is
// RFC 8410's PKCS#8 (version 0, no attributes, no public key), 48 bytes of DER, one base64
// line. Its DER is these 16 bytes then the 32-byte seed.
constexpr unsigned char kEd25519Pkcs8Prefix[] = {0x30, 0x2e, 0x02, 0x01, 0x00, 0x30,
                                                 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70,
                                                 0x04, 0x22, 0x04, 0x20};
constexpr std::string_view kPemBegin = "-----BEGIN PRIVATE KEY-----\n";
constexpr std::string_view kPemEnd = "\n-----END PRIVATE KEY-----\n";
constexpr std::size_t kMoatdPemSize = 119;  // the two lines above and 64 characters of base64

// The value of one base64 character, -1 outside the standard alphabet ('=' included).
int base64_value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

// The key in `pem` when the file is exactly what create_key writes, made from its seed; else
// null, and the caller parses the file with OpenSSL's PEM reader. The reader decodes through
// every decoder its providers offer (0.5 ms of the hello's CPU at each private moatd's start,
// issue 30); the key it would give from these bytes is this one. 64 characters of the alphabet
// are the canonical base64 of 48 bytes (no padding, no bits left over). The DER is decoded into
// this frame and cleared here: no heap, so no copy of the seed is left in memory freed uncleared
// (a std::string grown byte by byte left one at each reallocation).
EVP_PKEY* key_as_moatd_wrote_it(std::string_view pem) {
  if (pem.size() != kMoatdPemSize || pem.substr(0, kPemBegin.size()) != kPemBegin ||
      pem.substr(pem.size() - kPemEnd.size()) != kPemEnd)
    return nullptr;
  const std::string_view b64 = pem.substr(kPemBegin.size(), 64);
  unsigned char der[sizeof kEd25519Pkcs8Prefix + kRawKeySize];
  static_assert(sizeof der / 3 * 4 == 64 && sizeof der % 3 == 0);
  bool ok = true;
  for (std::size_t i = 0; i < sizeof der / 3; ++i) {
    unsigned v = 0;
    for (std::size_t k = 0; k < 4; ++k) {
      const int d = base64_value(b64[4 * i + k]);
      ok = ok && d >= 0;
      v = (v << 6) | static_cast<unsigned>(d & 63);
    }
    der[3 * i] = static_cast<unsigned char>(v >> 16);
    der[3 * i + 1] = static_cast<unsigned char>(v >> 8);
    der[3 * i + 2] = static_cast<unsigned char>(v);
  }
  EVP_PKEY* pkey = nullptr;
  if (ok && std::memcmp(der, kEd25519Pkcs8Prefix, sizeof kEd25519Pkcs8Prefix) == 0)
    pkey = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, nullptr, der + sizeof kEd25519Pkcs8Prefix,
                                        kRawKeySize);
  // The private key's copies made here go as they came (OpenSSL's PEM reader clears its own).
  ::explicit_bzero(der, sizeof der);
  return pkey;
}

// The private key at `path` if it is what create_key writes, else null. Read into this frame
// and cleared (not sys::read_to_end, whose 64 KiB stack buffer kept the file's text after it
// returned, and whose string is not cleared when the file is larger than its limit).
EVP_PKEY* read_moatd_key(const std::string& path) {
  auto fd = sys::open_path(path, O_RDONLY | O_NONBLOCK | O_NOCTTY);
  if (!fd) return nullptr;
  char pem[kMoatdPemSize + 1];
  std::size_t size = 0;
  while (size < sizeof pem) {
    const ssize_t n = ::read(fd->get(), pem + size, sizeof pem - size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) size = 0;  // unread: left to the PEM reader, as any other file
    if (n <= 0) break;
    size += static_cast<std::size_t>(n);
  }
  EVP_PKEY* pkey = key_as_moatd_wrote_it(std::string_view(pem, size));
  ::explicit_bzero(pem, sizeof pem);
  return pkey;
}

Result<EVP_PKEY*> load_key(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return fail(Error::from_errno("stat", errno, path));
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%03o", static_cast<unsigned>(st.st_mode & 0777));
    return fail(Error::msg("audit key " + path + " has mode " + mode +
                           ": other users may read it; it must be 600 (chmod 600)"));
  }
  if (st.st_uid != ::geteuid())
    return fail(Error::from_errno("audit key owned by another user", EPERM, path));
  if (EVP_PKEY* pkey = read_moatd_key(path); pkey != nullptr) return pkey;
  FILE* f = std::fopen(path.c_str(), "re");
  if (f == nullptr) return fail(Error::from_errno("open", errno, path));
  EVP_PKEY* pkey = PEM_read_PrivateKey(f, nullptr, nullptr, nullptr);
  std::fclose(f);
  if (pkey == nullptr || EVP_PKEY_get_base_id(pkey) != EVP_PKEY_ED25519) {
    if (pkey != nullptr) EVP_PKEY_free(pkey);
    return fail(Error::msg("audit key " + path +
                           ": not a PEM Ed25519 private key (move it away and moatd creates one)"));
  }
  return pkey;
}

}  // namespace

std::string audit_public_key_path(const std::string& key_path) {
  const std::string& p = key_path;
  const std::string stem =
      p.size() > 4 && p.compare(p.size() - 4, 4, ".pem") == 0 ? p.substr(0, p.size() - 4) : p;
  return stem + ".pub";
}

AuditKey::~AuditKey() { EVP_PKEY_free(as_pkey(pkey_)); }

Result<std::unique_ptr<AuditKey>> AuditKey::load_or_create(const std::string& path) {
  MOAT_TRY(make_dirs(dirname_of(path), 0700));
  EVP_PKEY* pkey = nullptr;
  if (::access(path.c_str(), F_OK) == 0) {
    MOAT_ASSIGN_OR_RETURN(pkey, load_key(path));
  } else {
    auto created = create_key(path);
    if (!created && created.error().code == EEXIST) created = load_key(path);
    if (!created) return fail(created.error());
    pkey = *created;
  }
  std::unique_ptr<AuditKey> key(new AuditKey(pkey));
  if (::access(audit_public_key_path(path).c_str(), F_OK) != 0) MOAT_TRY(write_public(pkey, path));
  return key;
}

std::string AuditKey::key_id() const { return audit_key_id(raw_public(as_pkey(pkey_))); }

std::string AuditKey::public_key_b64() const { return base64_encode(raw_public(as_pkey(pkey_))); }

std::string AuditKey::sign_b64(std::string_view message) const {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  unsigned char sig[64];
  std::size_t len = sizeof sig;
  const bool ok =
      ctx != nullptr && EVP_DigestSignInit(ctx, nullptr, nullptr, nullptr, as_pkey(pkey_)) == 1 &&
      EVP_DigestSign(ctx, sig, &len, reinterpret_cast<const unsigned char*>(message.data()),
                     message.size()) == 1;
  EVP_MD_CTX_free(ctx);
  return ok ? base64_encode(std::string_view(reinterpret_cast<const char*>(sig), len)) : "";
}

std::string audit_key_id(const std::string& raw_public_key) {
  return "ed25519:" + sha256_hex(raw_public_key).substr(0, 16);
}

Result<std::string> read_audit_public_key(const std::string& path) {
  MOAT_ASSIGN_OR_RETURN(std::string text, read_file(path));
  if (text.find("-----BEGIN PUBLIC KEY-----") != std::string::npos) {
    BIO* bio = BIO_new_mem_buf(text.data(), static_cast<int>(text.size()));
    EVP_PKEY* pkey = bio != nullptr ? PEM_read_bio_PUBKEY(bio, nullptr, nullptr, nullptr) : nullptr;
    BIO_free(bio);
    std::string raw;
    if (pkey != nullptr && EVP_PKEY_get_base_id(pkey) == EVP_PKEY_ED25519) raw = raw_public(pkey);
    EVP_PKEY_free(pkey);
    if (raw.size() == kRawKeySize) return raw;
    return fail(
        Error::msg(path + ": not an Ed25519 public key (expected the audit-key.pub moatd wrote)"));
  }
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  std::string raw = strict_base64_decode(text);
  if (raw.size() != kRawKeySize)
    return fail(
        Error::msg(path + ": expected a PEM public key or a base64 Ed25519 key of 32 bytes"));
  return raw;
}

bool verify_audit_signature(const std::string& raw_public_key, std::string_view message,
                            const std::string& sig_b64) {
  const std::string sig = strict_base64_decode(sig_b64);
  if (raw_public_key.size() != kRawKeySize || sig.size() != 64) return false;
  EVP_PKEY* pkey = EVP_PKEY_new_raw_public_key(
      EVP_PKEY_ED25519, nullptr, reinterpret_cast<const unsigned char*>(raw_public_key.data()),
      raw_public_key.size());
  if (pkey == nullptr) return false;
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  const bool ok =
      ctx != nullptr && EVP_DigestVerifyInit(ctx, nullptr, nullptr, nullptr, pkey) == 1 &&
      EVP_DigestVerify(ctx, reinterpret_cast<const unsigned char*>(sig.data()), sig.size(),
                       reinterpret_cast<const unsigned char*>(message.data()), message.size()) == 1;
  EVP_MD_CTX_free(ctx);
  EVP_PKEY_free(pkey);
  return ok;
}

std::string checkpoint_message(const std::string& session, unsigned long long count,
                               const std::string& head) {
  return "moat-audit-checkpoint/1|" + session + "|" + std::to_string(count) + "|" + head;
}

std::string strict_base64_decode(std::string_view b64) {
  std::string raw = base64_decode(b64);
  return base64_encode(raw) == b64 ? raw : std::string();
}

}  // namespace moat::sessions
