// sessions/audit_key.h: the Ed25519 key that signs audit checkpoints (POLICY.md "Tamper
// evidence"). The hash chain proves order and content, not authorship: whoever can rewrite
// a whole file can recompute every hash. A checkpoint signs the chain's head with a key held
// by moatd, so a log rewritten (or cut and re-chained) without that key fails verification
// against the public key its owner kept.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "base/result.h"

namespace moat::sessions {

class AuditKey {
 public:
  ~AuditKey();
  AuditKey(const AuditKey&) = delete;
  AuditKey& operator=(const AuditKey&) = delete;

  // Loads the PEM private key at `path`, or creates one there (mode 0600, its directory
  // 0700) when the file does not exist, and writes the public key next to it as
  // `<path minus .pem>.pub` (PEM). A key file that is not a private Ed25519 key, or that
  // other users can read, is an error naming the file: never silently replaced.
  static Result<std::unique_ptr<AuditKey>> load_or_create(const std::string& path);

  std::string key_id() const;          // "ed25519:" + first 16 hex of SHA-256(raw public key)
  std::string public_key_b64() const;  // the raw 32-byte public key, base64
  std::string sign_b64(std::string_view message) const;  // Ed25519 signature, base64

 private:
  explicit AuditKey(void* pkey) : pkey_(pkey) {}
  void* pkey_;  // EVP_PKEY*
};

// Where load_or_create writes the public half of the key at `key_path`: the path minus
// ".pem", plus ".pub".
std::string audit_public_key_path(const std::string& key_path);

// "ed25519:" + first 16 hex of SHA-256 of the raw public key.
std::string audit_key_id(const std::string& raw_public_key);

// The raw public key from a PEM public key file (what load_or_create writes as .pub), or
// from a file holding the base64 raw key on one line.
Result<std::string> read_audit_public_key(const std::string& path);

// Whether `sig_b64` is a valid Ed25519 signature of `message` under `raw_public_key`.
bool verify_audit_signature(const std::string& raw_public_key, std::string_view message,
                            const std::string& sig_b64);

// The signed message of a checkpoint: "moat-audit-checkpoint/1|<session>|<count>|<head>".
std::string checkpoint_message(const std::string& session, unsigned long long count,
                               const std::string& head);

// base64 decoding that accepts only the canonical encoding (empty otherwise): a key or a
// signature in the log has exactly one spelling.
std::string strict_base64_decode(std::string_view b64);

}  // namespace moat::sessions
