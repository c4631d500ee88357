// tests/integration/e2e/net_clients_test.cc: real clients through the network proxy (issue
// 18): curl and Python over HTTPS to a local TLS server whose certificate a CA made at test
// time signed, and pip and npm configured by nothing but the proxy variables, against local
// indexes. Nothing is downloaded: every server runs on the host's 127.0.0.1 and moatd's
// resolver maps the *.test names to it.
#include <gtest/gtest.h>

#include <fstream>
#include <random>

#include "net_proxy_fixture.h"

namespace moat::e2e {
namespace {

// Serves the file argv[1] for any GET over TLS with the chain argv[2] and key argv[3].
constexpr const char* kTlsServer = R"(import http.server, ssl, sys
body = open(sys.argv[1], 'rb').read()
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
s = http.server.ThreadingHTTPServer(('127.0.0.1', 0), H)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(sys.argv[2], sys.argv[3])
s.socket = ctx.wrap_socket(s.socket, server_side=True)
print(s.server_address[1], flush=True)
s.serve_forever()
)";

// Serves the directory argv[1] over plain HTTP, as `python3 -m http.server` does.
constexpr const char* kDirServer = R"(import functools, http.server, sys
H = functools.partial(http.server.SimpleHTTPRequestHandler, directory=sys.argv[1])
H.log_message = lambda *a: None
s = http.server.ThreadingHTTPServer(('127.0.0.1', 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
)";

// Builds, in argv[1], a package index for pip (simple/, with a wheel made here: one module
// and the dist-info pip checks) and a registry for npm (npm/, with a tarball made here and
// its packument naming the tarball at the base URL argv[2]).
constexpr const char* kMakeIndexes = R"(import base64, hashlib, io, json, os, sys, tarfile, zipfile
root = sys.argv[1]
# A wheel, built here: one module and the dist-info pip checks.
name, ver = "moat_demo", "1.0"
files = {f"{name}/__init__.py": b"ANSWER = 42\n",
         f"{name}-{ver}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: moat-demo\nVersion: {ver}\n".encode(),
         f"{name}-{ver}.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: moat-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
record = ""
for p, b in files.items():
    d = base64.urlsafe_b64encode(hashlib.sha256(b).digest()).rstrip(b"=").decode()
    record += f"{p},sha256={d},{len(b)}\n"
record += f"{name}-{ver}.dist-info/RECORD,,\n"
files[f"{name}-{ver}.dist-info/RECORD"] = record.encode()
wheel = f"{name}-{ver}-py3-none-any.whl"
os.makedirs(f"{root}/files", exist_ok=True)
with zipfile.ZipFile(f"{root}/files/{wheel}", "w") as z:
    for p, b in files.items():
        z.writestr(p, b)
sha = hashlib.sha256(open(f"{root}/files/{wheel}", "rb").read()).hexdigest()
os.makedirs(f"{root}/simple/moat-demo", exist_ok=True)
open(f"{root}/simple/moat-demo/index.html", "w").write(
    f'<html><body><a href="/files/{wheel}#sha256={sha}">{wheel}</a></body></html>\n')
# An npm package and its packument, as a registry serves them.
buf = io.BytesIO()
with tarfile.open(fileobj=buf, mode="w:gz") as t:
    pj = json.dumps({"name": "moat-demo", "version": "1.0.0", "main": "index.js"}).encode()
    for p, b in {"package/package.json": pj, "package/index.js": b"module.exports = 42;\n"}.items():
        info = tarfile.TarInfo(p); info.size = len(b); info.mode = 0o644
        t.addfile(info, io.BytesIO(b))
tgz = buf.getvalue()
os.makedirs(f"{root}/npm/moat-demo/-", exist_ok=True)
open(f"{root}/npm/moat-demo/-/moat-demo-1.0.0.tgz", "wb").write(tgz)
host = sys.argv[2]
packument = {"name": "moat-demo", "dist-tags": {"latest": "1.0.0"}, "versions": {"1.0.0": {
    "name": "moat-demo", "version": "1.0.0", "main": "index.js",
    "dist": {"tarball": f"{host}/npm/moat-demo/-/moat-demo-1.0.0.tgz",
             "shasum": hashlib.sha1(tgz).hexdigest(),
             "integrity": "sha512-" + base64.b64encode(hashlib.sha512(tgz).digest()).decode()}}}}
open(f"{root}/npm/moat-demo/index.html", "w").write(json.dumps(packument))
print(sha)
)";

// A CA and a certificate for `name` it signed, made with openssl in `dir`: ca.crt,
// server.crt, server.key. Empty on success, else what openssl said.
std::string make_test_ca(const std::string& dir, const std::string& name) {
  std::ofstream(dir + "/ext.cnf") << "subjectAltName=DNS:" << name << "\n";
  const std::vector<std::vector<std::string>> steps = {
      {"openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
       "-nodes", "-keyout", dir + "/ca.key", "-out", dir + "/ca.crt", "-days", "2", "-subj",
       "/CN=moat test CA"},
      {"openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
       "-keyout", dir + "/server.key", "-out", dir + "/server.csr", "-subj", "/CN=" + name},
      {"openssl", "x509", "-req", "-in", dir + "/server.csr", "-CA", dir + "/ca.crt", "-CAkey",
       dir + "/ca.key", "-CAcreateserial", "-out", dir + "/server.crt", "-days", "2", "-extfile",
       dir + "/ext.cnf"}};
  for (const auto& argv : steps) {
    Run r = run(argv);
    if (r.exit_code != 0) return r.out;
  }
  return "";
}

std::string random_bytes(std::size_t n) {
  std::mt19937_64 gen(std::random_device{}());
  std::string out(n, '\0');
  for (char& c : out) c = static_cast<char>(gen());
  return out;
}

std::string sha256_of(const std::string& path) {
  Run r = run({"sha256sum", path});
  return r.out.substr(0, 64);
}

TEST_F(NetProxyTest, HttpsWithATestCaReachesTheServerThroughConnectWithTheBytesUntouched) {
  ASSERT_EQ(make_test_ca(dir_.path(), "secure.test"), "");
  std::ofstream(dir_.path() + "/body.bin", std::ios::binary) << random_bytes(1 << 20);
  const std::string want = sha256_of(dir_.path() + "/body.bin");
  ScriptServer tls(
      dir_.path(), "tls", kTlsServer,
      {dir_.path() + "/body.bin", dir_.path() + "/server.crt", dir_.path() + "/server.key"});
  ASSERT_GT(tls.port(), 0) << tls.log();
  fs::copy_file(dir_.path() + "/ca.crt", ws_ + "/ca.crt");
  const std::string u = "https://secure.test:" + std::to_string(tls.port()) + "/body";
  auto out = run_session(
      {"curl -sS --max-time 30 --cacert ca.crt -o got.bin " + u + " && sha256sum got.bin",
       "curl -sS --max-time 30 -o /dev/null " + u + "; echo curl-exit=$?",
       "python3 -c 'import hashlib, ssl, urllib.request; c = "
       "ssl.create_default_context(cafile=\"ca.crt\"); print(hashlib.sha256(urllib.request."
       "urlopen(\"" +
           u + "\", context=c).read()).hexdigest())'"});
  EXPECT_EQ(out[0].substr(0, 64), want) << out[0] << moatd_log();
  // The proxy passed the server's own certificate through: without the test CA it is
  // untrusted (curl's 60), so nothing in between re-signed or read the stream.
  EXPECT_NE(out[1].find("curl-exit=60"), std::string::npos) << out[1];
  EXPECT_NE(out[2].find(want), std::string::npos) << out[2];
  for (const char* call : {"c0", "c2"}) {
    json r = net_record_of(records_, call);
    ASSERT_FALSE(r.is_null()) << call << ": " << json(records_).dump();
    EXPECT_EQ(r.value("method", ""), "CONNECT") << r.dump();
    EXPECT_EQ(r.value("host", ""), "secure.test") << r.dump();
    EXPECT_EQ(r.value("port", 0), tls.port()) << r.dump();
    EXPECT_EQ(r.value("decision", ""), "allow") << r.dump();
    EXPECT_EQ(r.value("rule", ""), "test.clients") << r.dump();
    EXPECT_EQ(r.value("address", ""), "127.0.0.1") << r.dump();
    EXPECT_GT(r.value("bytes_down", 0), 1 << 20) << "the body and the TLS records: " << r.dump();
    json exec = exec_record(all_records_, call, std::string(call) == "c0" ? "curl" : "python3");
    ASSERT_FALSE(exec.is_null());
    EXPECT_EQ(r["exec_id"], exec["exec_id"]) << r.dump();
  }
}

// A local index served on the host (index.test, which moatd resolves to 127.0.0.1), with
// a pip index and an npm registry built at test time.
class LocalIndex {
 public:
  explicit LocalIndex(const std::string& dir)
      : root_(dir + "/index"),
        server_((fs::create_directories(root_), dir), "index", kDirServer, {root_}) {
    base_ = "http://index.test:" + std::to_string(server_.port());
    std::ofstream(dir + "/make_indexes.py") << kMakeIndexes;
    made_ = run({"python3", dir + "/make_indexes.py", root_, base_});
  }
  bool ok() const { return server_.port() > 0 && made_.exit_code == 0; }
  std::string why() const { return made_.out + server_.log(); }
  const std::string& base() const { return base_; }
  int port() const { return server_.port(); }

 private:
  std::string root_;
  ScriptServer server_;
  std::string base_;
  Run made_;
};

// Every net record of a call goes to the index, allowed by its rule, and names the program.
void expect_index_records(const std::vector<json>& records, const std::vector<json>& all,
                          const std::string& call, const std::string& program, int port) {
  int seen = 0;
  const json exec = exec_record(all, call, program);
  for (const json& r : records) {
    if (r.value("call_id", "") != call) continue;
    ++seen;
    EXPECT_EQ(r.value("host", ""), "index.test") << r.dump();
    EXPECT_EQ(r.value("port", 0), port) << r.dump();
    EXPECT_EQ(r.value("decision", ""), "allow") << r.dump();
    EXPECT_EQ(r.value("rule", ""), "test.clients") << r.dump();
    EXPECT_GT(r.value("bytes_down", 0), 0) << r.dump();
    EXPECT_EQ(r["exec_id"], exec["exec_id"]) << r.dump();
  }
  EXPECT_GE(seen, 1) << call << " made no connection: " << json(records).dump();
  EXPECT_FALSE(exec.is_null()) << "no exec record of " << program;
}

TEST_F(NetProxyTest, PipInstallsAWheelFromALocalIndexWithOnlyTheProxyVariables) {
  if (run({"python3", "-m", "pip", "--version"}).exit_code != 0)
    GTEST_SKIP() << "python3 -m pip is not installed on this host";
  LocalIndex index(dir_.path());
  ASSERT_TRUE(index.ok()) << index.why();
  auto out = run_session(
      // --trusted-host: the local index is plain HTTP, which pip otherwise ignores.
      {"python3 -m pip install --no-cache-dir --disable-pip-version-check --trusted-host "
       "index.test --index-url " +
           index.base() +
           "/simple/ --target t moat-demo && python3 -c 'import sys; "
           "sys.path.insert(0, \"t\"); import moat_demo; print(\"answer\", moat_demo.ANSWER)'",
       "python3 -m pip download --no-cache-dir --disable-pip-version-check --trusted-host "
       "denied.test --index-url "
       "http://denied.test:" +
           std::to_string(index.port()) +
           "/simple/ -d dl moat-demo; "
           "echo pip-exit=$?"});
  EXPECT_NE(out[0].find("answer 42"), std::string::npos) << out[0] << moatd_log();
  EXPECT_EQ(out[1].find("pip-exit=0"), std::string::npos) << out[1];
  expect_index_records(records_, all_records_, "c0", "python3", index.port());
  json denied = net_record_of(records_, "c1");
  ASSERT_FALSE(denied.is_null()) << json(records_).dump();
  EXPECT_EQ(denied.value("rule", ""), "defaults.network") << denied.dump();
}

TEST_F(NetProxyTest, NpmInstallsAPackageFromALocalRegistryWithOnlyTheProxyVariables) {
  if (run({"sh", "-c", "command -v npm && command -v node"}).exit_code != 0)
    GTEST_SKIP() << "npm or node is not installed on this host (Debian's npm package)";
  LocalIndex index(dir_.path());
  ASSERT_TRUE(index.ok()) << index.why();
  auto out = run_session(
      {"npm install --registry " + index.base() +
       "/npm/ --cache ./npm-cache --no-audit --no-fund --no-update-notifier moat-demo && "
       "node -e 'console.log(\"answer\", require(\"moat-demo\"))'"});
  EXPECT_NE(out[0].find("answer 42"), std::string::npos) << out[0] << moatd_log();
  // npm is a script for node: node's program opens the connections.
  expect_index_records(records_, all_records_, "c0", "node", index.port());
}

}  // namespace
}  // namespace moat::e2e
