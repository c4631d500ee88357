// tests/unit/sessions/audit_key_test.cc: signed checkpoints. The hash chain alone cannot tell
// a rewritten log from the real one (anyone can recompute hashes); these tests rewrite logs
// the way an attacker without moatd's key would, and check that verification against the
// owner's public key catches each rewrite, while an honest log passes.
#include "sessions/audit_key.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <openssl/evp.h>
#include <openssl/pem.h>

#include "base/base64.h"
#include "sessions/audit.h"
#include "sessions/audit_verify.h"
#include "sessions/jcs.h"
#include "sessions/json_util.h"
#include "sessions/jsonl.h"
#include "temp_dir.h"

namespace moat::sessions {
namespace {

using nlohmann::json;
using testing::slurp;
using testing::spit;
using testing::TempDir;

constexpr const char* kSession = "01890a5d-ac96-774b-bcce-b302099a8057";
constexpr const char* kPolicy = "sha256:5e1c";

std::shared_ptr<const AuditKey> make_key(const std::string& path) {
  auto k = AuditKey::load_or_create(path);
  EXPECT_TRUE(k.has_value()) << k.error().message();
  return k ? std::shared_ptr<const AuditKey>(std::move(*k)) : nullptr;
}

// start, n decisions, end; with the key, checkpoints every kCheckpointEvery and at the end.
std::string write_log(const std::string& dir, int n_middle, std::shared_ptr<const AuditKey> key) {
  auto log = AuditLog::open(dir, kSession, kPolicy, std::move(key));
  EXPECT_TRUE(log.has_value()) << log.error().message();
  EXPECT_TRUE((*log)->append("session.start", {{"version", "0.1.0"}}).has_value());
  for (int i = 0; i < n_middle; ++i)
    EXPECT_TRUE((*log)->append("decision", {{"tool", "bash"}, {"n", i}}).has_value());
  EXPECT_TRUE((*log)->append("session.end", json::object()).has_value());
  return (*log)->path();
}

std::vector<json> records_of(const std::string& data) {
  std::vector<json> out;
  for (const Line& l : whole_lines(data)) out.push_back(parse_json(l.text));
  return out;
}

// What an attacker without the key can do: renumber, re-link and re-hash every record (and
// point each checkpoint's head at the new hashes), so the chain itself is whole again.
std::string rechain(std::vector<json> recs) {
  std::string prev = audit_genesis(kSession, kPolicy), out;
  uint64_t seq = 0;
  for (json& r : recs) {
    r["seq"] = ++seq;
    r["prev"] = prev;
    if (r["type"] == "checkpoint") {
      r["head"] = prev;
      r["count"] = seq - 1;
    }
    r["hash"] = *audit_record_hash(r);
    prev = r["hash"];
    out += *canonical_json(r) + "\n";
  }
  return out;
}

std::string trusted_key(const std::string& key_path) {
  auto k = read_audit_public_key(key_path.substr(0, key_path.size() - 4) + ".pub");
  EXPECT_TRUE(k.has_value()) << k.error().message();
  return k ? *k : "";
}

TEST(AuditKey, IsCreatedPrivateWithItsPublicHalfAndLoadsAgainTheSame) {
  TempDir dir;
  const std::string path = dir.path() + "/keys/audit-key.pem";
  auto first = make_key(path);
  ASSERT_TRUE(first);
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(::stat((dir.path() + "/keys").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  auto again = make_key(path);
  ASSERT_TRUE(again);
  EXPECT_EQ(first->key_id(), again->key_id());
  EXPECT_EQ(audit_key_id(trusted_key(path)), first->key_id());
  EXPECT_EQ(first->key_id().rfind("ed25519:", 0), 0u);
}

TEST(AuditKey, AKeyOthersCanReadOrThatIsNotAKeyIsRefusedNotReplaced) {
  TempDir dir;
  const std::string path = dir.path() + "/audit-key.pem";
  ASSERT_TRUE(make_key(path));
  const std::string before = slurp(path);
  ::chmod(path.c_str(), 0640);
  auto readable = AuditKey::load_or_create(path);
  ASSERT_FALSE(readable.has_value());
  EXPECT_NE(readable.error().message().find("640"), std::string::npos)
      << readable.error().message();
  EXPECT_EQ(slurp(path), before);

  const std::string junk = dir.path() + "/junk.pem";
  spit(junk, "not a key\n");
  ::chmod(junk.c_str(), 0600);
  auto bad = AuditKey::load_or_create(junk);
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message().find("not a PEM Ed25519 private key"), std::string::npos);
  EXPECT_EQ(slurp(junk), "not a key\n");
}

// moatd reads the file it wrote (one base64 line of RFC 8410's PKCS#8) without OpenSSL's PEM
// decoders; the same key in any other PEM layout goes through them: either way the same key,
// which signs the same bytes (Ed25519 signatures are deterministic). Another key type in moatd's
// layout is refused as before.
TEST(AuditKey, ItsOwnFileAndTheSameKeyInAnotherPemLayoutLoadTheSameKey) {
  TempDir dir;
  const std::string path = dir.path() + "/audit-key.pem";
  auto created = make_key(path);
  ASSERT_TRUE(created);
  const std::string pem = slurp(path);
  ASSERT_EQ(pem.size(), 119u) << pem;
  const std::string begin = "-----BEGIN PRIVATE KEY-----\n", end = "-----END PRIVATE KEY-----\n";
  const std::string b64 = pem.substr(begin.size(), 64);
  std::string crlf;
  for (char c : pem) crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
  const std::vector<std::string> layouts = {
      pem, crlf, begin + b64.substr(0, 20) + "\n" + b64.substr(20) + "\n" + end,
      "a comment before it\n" + pem, pem + "\n"};
  for (std::size_t i = 0; i < layouts.size(); ++i) {
    const std::string other = dir.path() + "/layout" + std::to_string(i) + ".pem";
    spit(other, layouts[i]);
    ::chmod(other.c_str(), 0600);
    auto k = AuditKey::load_or_create(other);
    ASSERT_TRUE(k.has_value()) << i << ": " << k.error().message();
    EXPECT_EQ((*k)->key_id(), created->key_id()) << i;
    EXPECT_EQ((*k)->sign_b64("moat"), created->sign_b64("moat")) << i;
    EXPECT_EQ(slurp(other), layouts[i]) << i;
  }
  std::string der = base64_decode(b64);
  ASSERT_EQ(der.size(), 48u);
  ASSERT_EQ(static_cast<unsigned char>(der[11]), 0x70);  // id-Ed25519 (1.3.101.112)
  der[11] = 0x6e;                                       // id-X25519 (1.3.101.110)
  const std::string x25519 = dir.path() + "/x25519.pem";
  spit(x25519, begin + base64_encode(der) + "\n" + end);
  ::chmod(x25519.c_str(), 0600);
  auto refused = AuditKey::load_or_create(x25519);
  ASSERT_FALSE(refused.has_value());
  EXPECT_NE(refused.error().message().find("not a PEM Ed25519 private key"), std::string::npos)
      << refused.error().message();
}

// The key OpenSSL's PEM reader makes of `path` (what load_or_create used for every file before
// it read moatd's own layout itself), as its raw public key base64; "" when it gives no Ed25519
// key.
std::string pem_reader_public_key(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "re");
  if (f == nullptr) return "";
  EVP_PKEY* pkey = PEM_read_PrivateKey(f, nullptr, nullptr, nullptr);
  std::fclose(f);
  std::string out;
  unsigned char raw[32];
  std::size_t len = sizeof raw;
  if (pkey != nullptr && EVP_PKEY_get_base_id(pkey) == EVP_PKEY_ED25519 &&
      EVP_PKEY_get_raw_public_key(pkey, raw, &len) == 1)
    out = base64_encode(std::string_view(reinterpret_cast<char*>(raw), len));
  EVP_PKEY_free(pkey);
  return out;
}

// Each byte of moatd's own key file changed (to base64's other characters, padding, a line end,
// a space, a dash, a NUL, a non-ASCII byte), and the file cut or lengthened by one: load_or_create
// accepts exactly the files OpenSSL's PEM reader gives an Ed25519 key for, and makes that key.
TEST(AuditKey, MoatdsLayoutWithAnyByteChangedLoadsAsOpenSslsPemReaderReadsIt) {
  TempDir dir;
  const std::string path = dir.path() + "/audit-key.pem";
  ASSERT_TRUE(make_key(path));
  const std::string pem = slurp(path);
  ASSERT_EQ(pem.size(), 119u);
  std::vector<std::string> variants = {pem.substr(0, 118), pem + "\n", pem + "A"};
  for (std::size_t i = 0; i < pem.size(); ++i)
    for (char c : std::string("Aa0+/=\n -\x01\x80") + std::string(1, '\0')) {
      if (pem[i] == c) continue;
      std::string v = pem;
      v[i] = c;
      variants.push_back(v);
    }
  int accepted = 0;
  for (std::size_t n = 0; n < variants.size(); ++n) {
    const std::string file = dir.path() + "/v" + std::to_string(n) + ".pem";
    spit(file, variants[n]);
    ::chmod(file.c_str(), 0600);
    const std::string expected = pem_reader_public_key(file);
    auto key = AuditKey::load_or_create(file);
    ASSERT_EQ(key.has_value(), !expected.empty()) << n << ": " << variants[n];
    if (!key) continue;
    ++accepted;
    EXPECT_EQ((*key)->public_key_b64(), expected) << n << ": " << variants[n];
  }
  EXPECT_GT(accepted, 0);  // some changes keep a key (another seed): both take it
}

// Whether a readable and writable mapping of this process that is not a file's ([stack], [heap],
// anonymous ones up to 1 GiB) holds the bytes of `masked` each XORed with kMask: the needle
// itself is never in memory as it is. Read through /proc/self/mem into a mapping of its own, left
// out of the scan.
constexpr unsigned char kMask = 0x5a;
bool memory_holds(const std::string& masked) {
  struct Range {
    unsigned long start, end;
  };
  std::vector<Range> ranges;
  {
    std::ifstream maps("/proc/self/maps");
    std::string line;
    while (std::getline(maps, line)) {
      unsigned long start = 0, end = 0, offset = 0, inode = 0;
      char perms[5] = {}, dev[16] = {}, name[256] = {};
      if (std::sscanf(line.c_str(), "%lx-%lx %4s %lx %15s %lu %255s", &start, &end, perms, &offset,
                      dev, &inode, name) < 6)
        continue;
      // Not the sanitizers' shadow (terabytes reserved, untouched): the process's own memory.
      if (perms[0] == 'r' && perms[1] == 'w' && inode == 0 && end - start <= (1ul << 30) &&
          (name[0] == '\0' || std::string(name) == "[heap]" || std::string(name) == "[stack]"))
        ranges.push_back({start, end});
    }
  }
  const std::size_t chunk = 1 << 20;
  auto* buf = static_cast<unsigned char*>(
      ::mmap(nullptr, chunk, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  EXPECT_NE(buf, MAP_FAILED);
  const int mem = ::open("/proc/self/mem", O_RDONLY | O_CLOEXEC);
  EXPECT_GE(mem, 0);
  const auto own = reinterpret_cast<unsigned long>(buf);
  bool found = false;
  for (const Range& r : ranges) {
    if (r.start <= own && own < r.end) continue;
    // Chunks overlap by the needle's length less one, so no match straddles two unseen.
    for (unsigned long at = r.start; at < r.end && !found; at += chunk - masked.size() + 1) {
      const ssize_t n =
          ::pread(mem, buf, std::min<unsigned long>(chunk, r.end - at), static_cast<off_t>(at));
      for (ssize_t i = 0; i + static_cast<ssize_t>(masked.size()) <= n && !found; ++i) {
        std::size_t k = 0;
        while (k < masked.size() &&
               (buf[i + static_cast<ssize_t>(k)] ^ kMask) == static_cast<unsigned char>(masked[k]))
          ++k;
        found = k == masked.size();
      }
    }
  }
  ::close(mem);
  ::munmap(buf, chunk);
  return found;
}

// The audit key is read from moatd's own file into memory that is cleared once the key is made
// (3487a28 said so, but the file's text stayed in sys::read_to_end's 64 KiB stack buffer, and
// the DER's first 30 bytes, 14 of the seed, in a block std::string freed as it grew): after the
// load, no stack or heap memory holds the file's base64 (what the seed is written as).
TEST(AuditKey, ReadingItsOwnFileLeavesNoCopyOfItsTextInMemory) {
  TempDir dir;
  const std::string path = dir.path() + "/audit-key.pem";
  spit(audit_public_key_path(path), "");  // present: load_or_create writes no public key
  unsigned char der[48] = {0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06,
                           0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20};
  std::random_device random;
  for (std::size_t i = 16; i < sizeof der; ++i) der[i] = static_cast<unsigned char>(random());
  std::string b64 = base64_encode(std::string_view(reinterpret_cast<char*>(der), sizeof der));
  ASSERT_EQ(b64.size(), 64u);
  std::string masked;  // characters 24..63: the base64 of seed bytes 2..31
  for (std::size_t i = 24; i < 64; ++i) masked += static_cast<char>(b64[i] ^ kMask);
  {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    ASSERT_GE(fd, 0);
    const std::string_view begin = "-----BEGIN PRIVATE KEY-----\n";
    const std::string_view end = "\n-----END PRIVATE KEY-----\n";
    ASSERT_EQ(::write(fd, begin.data(), begin.size()), static_cast<ssize_t>(begin.size()));
    ASSERT_EQ(::write(fd, b64.data(), b64.size()), 64);
    ASSERT_EQ(::write(fd, end.data(), end.size()), static_cast<ssize_t>(end.size()));
    ::close(fd);
  }
  ::explicit_bzero(b64.data(), b64.size());
  ::explicit_bzero(der, sizeof der);
  ASSERT_FALSE(memory_holds(masked)) << "the test's own copies";
  auto key = AuditKey::load_or_create(path);
  ASSERT_TRUE(key.has_value()) << key.error().message();
  EXPECT_FALSE(memory_holds(masked));
}

TEST(AuditKey, SignaturesVerifyOnlyForTheirMessageAndKey) {
  TempDir dir;
  auto a = make_key(dir.path() + "/a.pem");
  auto b = make_key(dir.path() + "/b.pem");
  const std::string sig = a->sign_b64("moat");
  const std::string raw_a = strict_base64_decode(a->public_key_b64());
  EXPECT_TRUE(verify_audit_signature(raw_a, "moat", sig));
  EXPECT_FALSE(verify_audit_signature(raw_a, "moaT", sig));
  EXPECT_FALSE(verify_audit_signature(strict_base64_decode(b->public_key_b64()), "moat", sig));
  EXPECT_FALSE(verify_audit_signature(raw_a, "moat", "garbage"));
}

TEST(AuditCheckpoints, FollowEverySixtyFourthRecordAndSessionEnd) {
  TempDir dir;
  const std::string key_path = dir.path() + "/audit-key.pem";
  auto key = make_key(key_path);
  const std::string data = slurp(write_log(dir.path() + "/audit", 140, key));
  const auto recs = records_of(data);
  std::vector<uint64_t> counts;
  for (const json& r : recs)
    if (r["type"] == "checkpoint") counts.push_back(r["count"].get<uint64_t>());
  // 142 records of the session: checkpoints after seq 64, after 129 (the 128th record of the
  // session plus the first checkpoint), and after session.end.
  ASSERT_EQ(counts.size(), 3u) << data;
  EXPECT_EQ(counts[0], 64u);
  EXPECT_EQ(recs.back()["type"], "checkpoint");
  EXPECT_EQ(recs[recs.size() - 2]["type"], "session.end");
  EXPECT_EQ(recs.front()["audit_key"]["key_id"], key->key_id());

  const AuditVerdict v = verify_audit(data, true, trusted_key(key_path));
  EXPECT_TRUE(v.ok()) << problem_name(v.problem) << ": " << v.detail;
  EXPECT_EQ(v.checkpoints, 3u);
  EXPECT_EQ(v.signed_through, v.records - 1);
  EXPECT_TRUE(v.key_trusted);
  // Without a key of its own, the verifier uses the one the log names, and says so.
  const AuditVerdict named = verify_audit(data);
  EXPECT_TRUE(named.ok()) << named.detail;
  EXPECT_FALSE(named.key_trusted);
  EXPECT_EQ(named.checkpoints, 3u);
}

// A slow session is not left unsigned until its 64th record: the first record appended an
// interval after the last checkpoint gets one.
TEST(AuditCheckpoints, AlsoFollowTheFirstRecordAnIntervalAfterTheLast) {
  TempDir dir;
  auto key = make_key(dir.path() + "/audit-key.pem");
  auto log =
      AuditLog::open(dir.path() + "/audit", kSession, kPolicy, key, std::chrono::milliseconds(200));
  ASSERT_TRUE(log.has_value()) << log.error().message();
  ASSERT_TRUE((*log)->append("session.start", json::object()).has_value());
  ASSERT_TRUE((*log)->append("decision", {{"n", 1}}).has_value());
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
  ASSERT_TRUE((*log)->append("decision", {{"n", 2}}).has_value());
  ASSERT_TRUE((*log)->append("decision", {{"n", 3}}).has_value());
  const auto recs = records_of(slurp((*log)->path()));
  ASSERT_EQ(recs.size(), 5u);
  EXPECT_EQ(recs[2]["n"], 2);
  EXPECT_EQ(recs[3]["type"], "checkpoint");
  EXPECT_EQ(recs[3]["count"], 3);
  EXPECT_EQ(recs[4]["n"], 3);  // the interval starts again at the checkpoint
  const AuditVerdict v = verify_audit(slurp((*log)->path()), false);
  EXPECT_TRUE(v.ok()) << v.detail;
  EXPECT_EQ(v.signed_through, 3u);
}

TEST(AuditCheckpoints, AnEditedAndRechainedLogFailsTheSignature) {
  TempDir dir;
  const std::string key_path = dir.path() + "/audit-key.pem";
  const std::string data = slurp(write_log(dir.path() + "/audit", 10, make_key(key_path)));
  auto recs = records_of(data);
  recs[3]["tool"] = "edited";
  const std::string forged = rechain(recs);
  ASSERT_TRUE(verify_audit(rechain(records_of(data))).ok()) << "rechain alone keeps a log valid";
  for (const std::string& key : {trusted_key(key_path), std::string()}) {
    const AuditVerdict v = verify_audit(forged, true, key);
    EXPECT_EQ(v.problem, AuditProblem::kBadSignature)
        << problem_name(v.problem) << ": " << v.detail;
    EXPECT_EQ(v.seq, recs.size());  // the final checkpoint is the first that covers the edit
  }
}

TEST(AuditCheckpoints, DroppingTheCheckpointsPassesOnlyWithoutTheOwnersKey) {
  TempDir dir;
  const std::string key_path = dir.path() + "/audit-key.pem";
  const std::string data = slurp(write_log(dir.path() + "/audit", 70, make_key(key_path)));
  std::vector<json> kept;
  for (const json& r : records_of(data))
    if (r["type"] != "checkpoint") kept.push_back(r);
  const std::string stripped = rechain(kept);
  EXPECT_TRUE(verify_audit(stripped).ok());
  const AuditVerdict v = verify_audit(stripped, true, trusted_key(key_path));
  EXPECT_EQ(v.problem, AuditProblem::kUnsigned) << v.detail;
  EXPECT_NE(v.detail.find("no signed checkpoint"), std::string::npos) << v.detail;
}

TEST(AuditCheckpoints, ALogResignedWithAnotherKeyFailsAgainstTheOwnersKey) {
  TempDir dir;
  const std::string key_path = dir.path() + "/audit-key.pem";
  auto mallory = make_key(dir.path() + "/mallory.pem");
  const std::string data = slurp(write_log(dir.path() + "/audit", 5, make_key(key_path)));
  // A whole forged log under the attacker's own key: internally consistent.
  const std::string forged = slurp(write_log(dir.path() + "/forged", 5, mallory));
  EXPECT_TRUE(verify_audit(forged).ok());
  const AuditVerdict v = verify_audit(forged, true, trusted_key(key_path));
  EXPECT_EQ(v.problem, AuditProblem::kBadSignature) << v.detail;
  EXPECT_NE(v.detail.find(mallory->key_id()), std::string::npos) << v.detail;
  EXPECT_TRUE(verify_audit(data, true, trusted_key(key_path)).ok());
}

// Issue 27 item 8: a session moatd refused at set-up (a bad --bind, --network with no rule)
// has one record, session.refused. It is the log's end: signed like session.end, and verified
// as whole, so verifying a whole audit folder is not failed by a refusal.
TEST(AuditCheckpoints, ARefusedSessionsOneRecordIsSignedAndVerifiesAsFinished) {
  TempDir dir;
  const std::string key_path = dir.path() + "/audit-key.pem";
  auto log = AuditLog::open(dir.path() + "/audit", kSession, kPolicy, make_key(key_path));
  ASSERT_TRUE(log.has_value()) << log.error().message();
  ASSERT_TRUE((*log)->append("session.refused", {{"reason", "the network was asked for"}}));
  const std::string data = slurp((*log)->path());
  const auto recs = records_of(data);
  ASSERT_EQ(recs.size(), 2u) << data;
  EXPECT_EQ(recs[0]["type"], "session.refused");
  EXPECT_EQ(recs[1]["type"], "checkpoint");
  const AuditVerdict v = verify_audit(data, true, trusted_key(key_path));
  EXPECT_TRUE(v.ok()) << problem_name(v.problem) << ": " << v.detail;
  EXPECT_EQ(v.signed_through, 1u);
  // Cut off its signature, the refusal fails against the owner's key like any unsigned end.
  const std::string cut = data.substr(0, whole_lines(data).back().offset);
  EXPECT_EQ(verify_audit(cut, true, trusted_key(key_path)).problem, AuditProblem::kUnsigned);
}

TEST(AuditCheckpoints, ACutAfterSessionEndLosesTheFinalSignature) {
  TempDir dir;
  const std::string key_path = dir.path() + "/audit-key.pem";
  const std::string data = slurp(write_log(dir.path() + "/audit", 3, make_key(key_path)));
  const auto lines = whole_lines(data);
  const std::string cut(data.substr(0, lines.back().offset));  // drop the final checkpoint
  EXPECT_TRUE(verify_audit(cut).ok()) << "without a trusted key the chain is all there is";
  const AuditVerdict v = verify_audit(cut, true, trusted_key(key_path));
  EXPECT_EQ(v.problem, AuditProblem::kUnsigned) << v.detail;
  // A running session (no session.end yet) is not held to a final checkpoint.
  EXPECT_TRUE(verify_audit(data.substr(0, lines[2].offset), false, trusted_key(key_path)).ok());
}

}  // namespace
}  // namespace moat::sessions
