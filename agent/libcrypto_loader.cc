// agent/libcrypto_loader.cc: the libcrypto functions the `moat` binary calls, loaded on first use.
//
// Loading libcrypto costs every process start about 1 ms here (3,400 symbol relocations, a
// third of `moat version`'s instructions), and most commands never hash or sign: `moat sandbox
// exec` and `moat run` leave that to moatd. This file, linked into `moat` only (moatd and the
// tests link libcrypto itself), defines each function the binary calls as a forwarder to
// libcrypto's own, which is opened the first time one is called. With it the linker
// (--as-needed) leaves libcrypto out of moat's needed libraries; a function used without a
// forwarder here brings it back, which MoatCliTest.MoatStartsWithoutLibcryptoAndOpensItToVerifyALog
// (tests/unit/agent/cli_sessions_test.cc) reports. libcrypto is opened by its soname, as the dynamic linker opened it before.
#include <dlfcn.h>
#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/opensslv.h>
#include <openssl/pem.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

#define MOAT_STR2(x) #x
#define MOAT_STR(x) MOAT_STR2(x)
constexpr const char* kLibcrypto = "libcrypto.so." MOAT_STR(OPENSSL_VERSION_MAJOR);

// libcrypto, opened once; a machine without it cannot run moat's commands that need it.
void* libcrypto() {
  static void* const handle = [] {
    void* h = ::dlopen(kLibcrypto, RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) {
      const char* why = ::dlerror();
      std::fprintf(stderr, "moat: %s could not be loaded: %s\n", kLibcrypto,
                   why != nullptr ? why : "unknown error");
      std::abort();
    }
    return h;
  }();
  return handle;
}

// libcrypto's `name`, typed as moat's declaration of it (the OpenSSL headers').
template <class Fn>
Fn real(const char* name) {
  void* f = ::dlsym(libcrypto(), name);
  if (f == nullptr) {
    std::fprintf(stderr, "moat: %s has no %s\n", kLibcrypto, name);
    std::abort();
  }
  return reinterpret_cast<Fn>(f);
}

}  // namespace

// Each forwarder resolves its function once (a thread-safe static) and calls it.
#define MOAT_FORWARD(ret, name, params, args)                       \
  ret name params {                                                 \
    static const auto fn = real<decltype(&::name)>(#name);          \
    return fn args;                                                 \
  }

extern "C" {

MOAT_FORWARD(int, CRYPTO_memcmp, (const void* a, const void* b, size_t len), (a, b, len))
MOAT_FORWARD(const EVP_MD*, EVP_sha256, (void), ())
MOAT_FORWARD(EVP_MD*, EVP_MD_fetch,
             (OSSL_LIB_CTX * ctx, const char* algorithm, const char* properties),
             (ctx, algorithm, properties))
MOAT_FORWARD(EVP_MD_CTX*, EVP_MD_CTX_new, (void), ())
MOAT_FORWARD(void, EVP_MD_CTX_free, (EVP_MD_CTX * ctx), (ctx))
MOAT_FORWARD(int, EVP_Digest,
             (const void* data, size_t count, unsigned char* md, unsigned int* size,
              const EVP_MD* type, ENGINE* impl),
             (data, count, md, size, type, impl))
MOAT_FORWARD(int, EVP_DigestInit_ex, (EVP_MD_CTX * ctx, const EVP_MD* type, ENGINE* impl),
             (ctx, type, impl))
MOAT_FORWARD(int, EVP_DigestUpdate, (EVP_MD_CTX * ctx, const void* d, size_t cnt), (ctx, d, cnt))
MOAT_FORWARD(int, EVP_DigestFinal_ex, (EVP_MD_CTX * ctx, unsigned char* md, unsigned int* s),
             (ctx, md, s))
MOAT_FORWARD(int, EVP_DigestSignInit,
             (EVP_MD_CTX * ctx, EVP_PKEY_CTX** pctx, const EVP_MD* type, ENGINE* e,
              EVP_PKEY* pkey),
             (ctx, pctx, type, e, pkey))
MOAT_FORWARD(int, EVP_DigestSign,
             (EVP_MD_CTX * ctx, unsigned char* sigret, size_t* siglen, const unsigned char* tbs,
              size_t tbslen),
             (ctx, sigret, siglen, tbs, tbslen))
MOAT_FORWARD(int, EVP_DigestVerifyInit,
             (EVP_MD_CTX * ctx, EVP_PKEY_CTX** pctx, const EVP_MD* type, ENGINE* e,
              EVP_PKEY* pkey),
             (ctx, pctx, type, e, pkey))
MOAT_FORWARD(int, EVP_DigestVerify,
             (EVP_MD_CTX * ctx, const unsigned char* sigret, size_t siglen,
              const unsigned char* tbs, size_t tbslen),
             (ctx, sigret, siglen, tbs, tbslen))
MOAT_FORWARD(void, EVP_PKEY_free, (EVP_PKEY * pkey), (pkey))
MOAT_FORWARD(int, EVP_PKEY_get_base_id, (const EVP_PKEY* pkey), (pkey))
MOAT_FORWARD(int, EVP_PKEY_get_raw_public_key,
             (const EVP_PKEY* pkey, unsigned char* pub, size_t* len), (pkey, pub, len))
MOAT_FORWARD(EVP_PKEY*, EVP_PKEY_new_raw_public_key,
             (int type, ENGINE* e, const unsigned char* pub, size_t len), (type, e, pub, len))
MOAT_FORWARD(EVP_PKEY*, EVP_PKEY_new_raw_private_key,
             (int type, ENGINE* e, const unsigned char* priv, size_t len), (type, e, priv, len))
MOAT_FORWARD(BIO*, BIO_new_mem_buf, (const void* buf, int len), (buf, len))
MOAT_FORWARD(int, BIO_free, (BIO * a), (a))
MOAT_FORWARD(EVP_PKEY*, PEM_read_PrivateKey,
             (FILE * fp, EVP_PKEY** x, pem_password_cb* cb, void* u), (fp, x, cb, u))
MOAT_FORWARD(EVP_PKEY*, PEM_read_bio_PUBKEY, (BIO * bp, EVP_PKEY** x, pem_password_cb* cb, void* u),
             (bp, x, cb, u))
MOAT_FORWARD(int, PEM_write_PUBKEY, (FILE * fp, const EVP_PKEY* x), (fp, x))
MOAT_FORWARD(int, PEM_write_PrivateKey,
             (FILE * fp, const EVP_PKEY* x, const EVP_CIPHER* enc, const unsigned char* kstr,
              int klen, pem_password_cb* cb, void* u),
             (fp, x, enc, kstr, klen, cb, u))

// Variadic: its extra arguments are the key type's parameters (RSA's bits, EC's curve), which
// a forwarder cannot pass on. moat makes Ed25519 keys only (sessions/audit_key.cc), which take
// none; any other type is refused here rather than made with parameters it never got.
EVP_PKEY* EVP_PKEY_Q_keygen(OSSL_LIB_CTX* libctx, const char* propq, const char* type, ...) {
  static const auto fn = real<decltype(&::EVP_PKEY_Q_keygen)>("EVP_PKEY_Q_keygen");
  if (std::strcmp(type, "ED25519") != 0 && std::strcmp(type, "X25519") != 0) {
    std::fprintf(stderr, "moat: EVP_PKEY_Q_keygen(%s): only parameterless key types\n", type);
    std::abort();
  }
  return fn(libctx, propq, type);
}

}  // extern "C"
