// tests/integration/e2e/cold_start_test.cc: what every `moat` and `moatd` start pays for before
// it does anything (issue 15 item 5: `moat sandbox exec` loaded 45 shared libraries, libcurl's
// TLS, Kerberos, LDAP and SSH among them, to run one command).
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "e2e_support.h"

namespace moat::e2e {
namespace {

namespace fs = std::filesystem;

// What libcurl pulls in; none of it is needed to start a session or run a command.
constexpr const char* kHttpLibraries[] = {"libcurl",   "libgnutls", "libnettle", "libkrb5",
                                          "libgssapi", "libldap",   "libssh",    "libnghttp2",
                                          "librtmp",   "libpsl",    "libidn2"};

// LD_TRACE_LOADED_OBJECTS has the dynamic loader list every library the program would load,
// its dependencies' dependencies too (what ldd prints), instead of running it.
std::string loaded_libraries(const std::string& bin) {
  Run r = run({bin}, {"LD_TRACE_LOADED_OBJECTS=1"});
  EXPECT_EQ(r.exit_code, 0) << bin << ":\n" << r.out;
  EXPECT_NE(r.out.find("libc.so"), std::string::npos) << "not a listing:\n" << r.out;
  return r.out;
}

TEST(ColdStart, MoatAndMoatdLoadNoHttpLibraries) {
  for (const std::string& bin : {moat_bin(), moatd_bin()}) {
    const std::string listing = loaded_libraries(bin);
    for (const char* lib : kHttpLibraries)
      EXPECT_EQ(listing.find(lib), std::string::npos) << bin << " loads " << lib << ":\n"
                                                      << listing;
  }
}

// Shared C++ libraries besides libstdc++ cost every start their loading and their symbol lookups
// (issue 30: libtomlplusplus.so's 207 and abseil's, ahead of libstdc++'s in every lookup): toml++
// is compiled into moat (policy/toml_library.cc) and abseil's hash tables are linked from its
// static archives (meson.build).
TEST(ColdStart, MoatAndMoatdLoadNeitherTomlNorAbseilLibraries) {
  for (const std::string& bin : {moat_bin(), moatd_bin()}) {
    const std::string listing = loaded_libraries(bin);
    for (const char* lib : {"libtomlplusplus", "libabsl_"})
      EXPECT_EQ(listing.find(lib), std::string::npos) << bin << " loads " << lib << ":\n"
                                                      << listing;
  }
}

// agent/c_libraries_loader.cc: libcap and libseccomp (the loop's privilege drop) and libutf8proc
// are opened on first use, not at every moat start; moatd links them. RunTest.* and the policy
// commands' tests call them through the forwarders.
TEST(ColdStart, MoatStartsWithoutLibcapLibseccompAndLibutf8proc) {
  const std::string listing = loaded_libraries(moat_bin());
  for (const char* lib : {"libcap.so", "libseccomp.so", "libutf8proc.so"})
    EXPECT_EQ(listing.find(lib), std::string::npos) << "moat loads " << lib << ":\n" << listing;
}

// The dynamic loader looks each symbol up in the loaded objects in their order, and libstdc++
// (1,760) and libcrypto (3,400, moatd) look up the most symbols of their own at every start:
// they come first in the binaries' needed libraries (meson.build's needed_first_*), ahead of the
// C libraries each lookup would otherwise try first (moat's start 9% fewer instructions).
std::vector<std::string> first_libraries(const std::string& bin, size_t n) {
  std::istringstream listing(loaded_libraries(bin));
  std::vector<std::string> out;
  for (std::string line; out.size() < n && std::getline(listing, line);)
    if (line.find(" => ") != std::string::npos)
      out.push_back(line.substr(line.find_first_not_of(" \t"),
                                line.find(" => ") - line.find_first_not_of(" \t")));
  return out;
}

TEST(ColdStart, TheLibrariesWithTheMostLookupsOfTheirOwnAreLoadedFirst) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "the sanitizers' runtime is the first library (meson.build)";
#endif
  const std::vector<std::string> moat = first_libraries(moat_bin(), 1);
  const std::vector<std::string> moatd = first_libraries(moatd_bin(), 2);
  ASSERT_EQ(moat.size(), 1u);
  ASSERT_EQ(moatd.size(), 2u);
  EXPECT_EQ(moat[0].rfind("libstdc++.so", 0), 0u) << moat[0];
  EXPECT_EQ(moatd[0].rfind("libcrypto.so", 0), 0u) << moatd[0];
  EXPECT_EQ(moatd[1].rfind("libstdc++.so", 0), 0u) << moatd[1];
}

// The HTTP transport is a module next to the binary (agent/providers/http_stream.h). A moat
// without it still runs every command, and a run that needs an HTTP provider says what is
// missing, before anything is started.
TEST(ColdStart, AnHttpProviderWithoutItsModuleIsAClearUsageError) {
  TempDir dir;
  const std::string lone = dir.path() + "/moat";
  fs::copy_file(moat_bin(), lone);
  fs::permissions(lone, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                            fs::perms::others_read | fs::perms::others_exec);
  ASSERT_EQ(run({lone, "version"}).exit_code, 0);
  fs::create_directories(dir.path() + "/config/moat");
  std::ofstream(dir.path() + "/config/moat/config.toml")
      << "[providers.far]\nkind = \"openai-chat\"\nbase_url = \"http://127.0.0.1:9\"\n"
         "local = true\n";
  fs::create_directories(dir.path() + "/ws");
  e2e::Run r =
      run({lone, "run", "--headless", "--model", "far/m", "-C", dir.path() + "/ws", "task"},
          {"XDG_CONFIG_HOME=" + dir.path() + "/config", "XDG_STATE_HOME=" + dir.path() + "/state",
           "MOATD_BIN=" + moatd_bin()});
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("the HTTP transport module (libmoat_http.so"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(dir.path() + "/libmoat_http.so"), std::string::npos)
      << "names the paths it tried:\n"
      << r.out;
}

// The audit log's syncs on the path of one command: its decision record before it runs (the
// write-ahead sync, which stays), and the session's end. session.start and session.end's
// checkpoint go to the disk with those, and the new log's directory entry is synced once, from
// the log's creation on (docs/sessions.md); each record was synced on its own, four fdatasyncs
// and a directory fsync before anything ran, at 0.3 to 4 ms each on this machine's disk.
TEST(ColdStart, OneCommandSyncsTheAuditLogForItsDecisionAndItsEndOnly) {
  std::string why;
  if (!sandbox_available(&why)) GTEST_SKIP() << why;
  if (::access("/usr/bin/strace", X_OK) != 0) GTEST_SKIP() << "needs strace to count the syncs";
  TempDir dir;
  fs::create_directories(dir.path() + "/ws");
  const std::string audit = dir.path() + "/audit", trace = dir.path() + "/trace";
  const std::vector<std::string> exec = {moat_bin(),         "sandbox",     "exec", "-C",
                                         dir.path() + "/ws", "--audit-dir", audit,  "--",
                                         "/bin/true"};
  const std::vector<std::string> env = {"XDG_CONFIG_HOME=" + dir.path() + "/config",
                                        "XDG_STATE_HOME=" + dir.path() + "/state",
                                        "MOATD_BIN=" + moatd_bin()};
  ASSERT_EQ(run(exec, env).exit_code, 0);  // the first one also creates the signing key
  std::vector<std::string> traced = {"/usr/bin/strace",
                                     "-f",
                                     "-qq",
                                     "-o",
                                     trace,
                                     "-e",
                                     "trace=fsync,fdatasync,sync,syncfs,sync_file_range"};
  traced.insert(traced.end(), exec.begin(), exec.end());
  e2e::Run r = run(traced, env);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::ifstream in(trace);
  std::string line, syncs;
  int data_syncs = 0, other_syncs = 0;
  while (std::getline(in, line)) {
    if (line.find("sync") == std::string::npos || line.find("resumed") != std::string::npos)
      continue;
    syncs += line + "\n";
    ++(line.find("fdatasync(") != std::string::npos ? data_syncs : other_syncs);
  }
  EXPECT_EQ(data_syncs, 2) << syncs;
  EXPECT_LE(other_syncs, 1) << "the new log's directory, once:\n" << syncs;
  int verified = 0;
  for (const auto& e : fs::recursive_directory_iterator(audit)) {
    if (e.path().extension() != ".jsonl") continue;
    e2e::Run v = run({moat_bin(), "audit", "verify", e.path().string()});
    EXPECT_EQ(v.exit_code, 0) << v.out;
    ++verified;
  }
  EXPECT_EQ(verified, 2);
}

}  // namespace
}  // namespace moat::e2e
