// sandbox/auditing_runner.cc: the per-process records of a call's exec audit entry.
#include "sandbox/auditing_runner.h"

#include <openssl/evp.h>

#include <chrono>
#include <memory>

#include "base/hex.h"
#include "base/timestamps.h"
#include "sandbox/protocol.h"

namespace moat::sandbox {
namespace {

using nlohmann::json;

// Incremental SHA-256 over a call's output as it streams (EVP: the non-deprecated API).
class Sha256Stream {
 public:
  Sha256Stream() : ctx_(EVP_MD_CTX_new(), EVP_MD_CTX_free) {
    EVP_DigestInit_ex(ctx_.get(), EVP_sha256(), nullptr);
  }
  void update(std::string_view d) { EVP_DigestUpdate(ctx_.get(), d.data(), d.size()); }
  std::string hex() {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    EVP_DigestFinal_ex(ctx_.get(), md, &n);
    return hex_encode(md, n);
  }

 private:
  std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> ctx_;
};

// How the process ended: its exit code or signal, and the limit that ended it, if one did.
json exit_json(const tools::ExecStatus& st) {
  json limit =
      st.limit.empty() ? (st.timed_out ? json("wall_time") : json(nullptr)) : json(st.limit);
  return {{"code", st.signal == 0 ? json(st.exit_code) : json(nullptr)},
          {"signal", st.signal != 0 ? json(st.signal) : json(nullptr)},
          {"limit", std::move(limit)}};
}

}  // namespace

// A word longer than kMaxCommandBytes cannot be exec'd (execve: E2BIG past MAX_ARG_STRLEN),
// so its record keeps that much and its length: a client's 15 MiB grep pattern must not
// become 15 MiB of audit log per call.
nlohmann::json argv_for_audit(const std::vector<std::string>& argv) {
  json out = json::array();
  for (const std::string& word : argv) {
    if (word.size() <= kMaxCommandBytes) {
      out.push_back(word);
    } else {
      out.push_back(cut_utf8(word, kMaxCommandBytes) + "[" + std::to_string(word.size()) +
                    " bytes]");
    }
  }
  return out;
}

Result<tools::ExecStatus> AuditingRunner::exec(
    const std::vector<std::string>& argv, const std::string& cwd, double timeout_s,
    const std::function<void(std::string_view)>& on_output, StopFlags stop) {
  Sha256Stream sha;
  const auto start = std::chrono::system_clock::now();
  auto st = inner_.exec(
      argv, cwd, timeout_s,
      [&](std::string_view chunk) {
        sha.update(chunk);
        if (on_output) on_output(chunk);
      },
      stop);
  json rec = {{"argv", argv_for_audit(argv)}, {"cwd", cwd}, {"start", rfc3339_ns(start)}};
  if (!st) {
    rec["error"] = st.error().message();
  } else {
    rec["pid"] = st->pid;
    rec["duration_ms"] = st->duration.count();
    rec["exit"] = exit_json(*st);
    rec["cancelled"] = st->cancelled;
    rec["output_bytes"] = st->output_bytes;
    rec["output_sha256"] = "sha256:" + sha.hex();
  }
  std::lock_guard<std::mutex> lock(mu_);
  processes_.push_back(std::move(rec));
  return st;
}

json AuditingRunner::processes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return processes_;
}

}  // namespace moat::sandbox
