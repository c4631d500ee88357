// tests/integration/e2e/cold_start_test.cc: what every `moat` and `moatd` start pays for before
// it does anything (issue 15 item 5: `moat sandbox exec` loaded 45 shared libraries, libcurl's
// TLS, Kerberos, LDAP and SSH among them, to run one command).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

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

}  // namespace
}  // namespace moat::e2e
