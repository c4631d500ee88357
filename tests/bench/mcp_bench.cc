// tests/bench/mcp_bench.cc: what moatd adds to an MCP tool call (issue 29, "Done when"). The
// same tool of the same server called N times one after another, (a) by a bare
// tools::mcp::Client talking to the server started directly on pipes, and (b) by moat's client
// (agent::MoatdClient, as `moat run` calls tools) through a private moatd, which runs the server
// inside the session's sandbox: a CallMsg for mcp__S__T, the call gate's decision and audit
// records, the host's client, and back. Prints each side's median and p90, their ratio and the
// median's difference (target: at most 2 ms above the bare client).
//
// Servers: the test server's echo (tests/support/mcp_test_server.cc), and server-everything's
// echo when node and the pinned reference servers ($MOAT_BUILD/mcp-servers) are installed.
//
// Usage: mcp_bench [CALLS [AUDIT_DIR]]   (default 500, and a directory under $TMPDIR or /tmp).
// Each call's decision record is fdatasync'd before the call runs (write-ahead, sessions/audit.h
// Sync::kNow): on a disk that sync is most of the overhead; an AUDIT_DIR on a tmpfs (/dev/shm)
// shows the rest. Needs moatd and the test server: $MOATD_BIN, else the build tree's
// (ninja sandbox/moatd tests/unit/tools/mcp_test_server tests/bench/mcp_bench).
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "../integration/e2e/e2e_support.h"
#include "../integration/e2e/load_clients.h"
#include "agent/client.h"
#include "tools/mcp_client.h"

namespace {

namespace fs = std::filesystem;
namespace mcp = moat::tools::mcp;
using nlohmann::json;
using moat::e2e::percentile;

constexpr int kWarmCalls = 20;

// The build tree (tests/bench/mcp_bench -> ../..).
fs::path build_root() {
  return fs::read_symlink("/proc/self/exe").parent_path().parent_path().parent_path();
}

// One server as both sides start it: its argv, the directory it needs bound read-only in the
// sandbox, the tool and its arguments.
struct Server {
  std::string label;
  std::vector<std::string> argv;
  std::string read_dir;
  std::string tool;
  json args;
};

// Milliseconds each of `calls` calls of `one` took (after kWarmCalls not counted); empty when
// one failed (its error printed).
std::vector<double> time_calls(int calls, const std::function<std::string()>& one) {
  std::vector<double> ms;
  for (int i = 0; i < kWarmCalls + calls; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    const std::string error = one();
    const auto t1 = std::chrono::steady_clock::now();
    if (!error.empty()) {
      std::fprintf(stderr, "  call %d failed: %s\n", i, error.c_str());
      return {};
    }
    if (i >= kWarmCalls) ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  return ms;
}

// (a) The server started directly, spoken to by a bare client on its stdin and stdout.
std::vector<double> bare(const Server& s, int calls) {
  int to[2], from[2];
  if (::pipe2(to, O_CLOEXEC) != 0 || ::pipe2(from, O_CLOEXEC) != 0) return {};
  const int null = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  const pid_t pid = moat::e2e::start_with_stdio(s.argv, {}, to[0], from[1], null);
  ::close(to[0]);
  ::close(from[1]);
  ::close(null);
  auto client = mcp::Client::start(s.label, moat::UniqueFd(to[1]), moat::UniqueFd(from[0]),
                                   mcp::ServerLimits{}, {});
  std::vector<double> ms;
  if (!client) {
    std::fprintf(stderr, "  bare client: %s\n", client.error().message().c_str());
  } else {
    ms = time_calls(calls, [&]() -> std::string {
      auto out = (*client)->call_tool(s.tool, s.args, {});
      if (!out) return out.error().message();
      return out->is_error ? "the tool answered isError" : "";
    });
    (*client)->close();
  }
  ::kill(pid, SIGTERM);
  moat::e2e::wait_exit(pid, 10);
  return ms;
}

// The user layer declaring `s` as server "b" (started with the session) and allowing its tool.
void write_user_layer(const Server& s, const std::string& dir) {
  fs::create_directories(dir);
  std::ofstream toml(dir + "/mcp.toml");
  toml << "schema = 1\n\n[[mcp.server]]\nname = \"b\"\ncommand = " << json(s.argv).dump()
       << "\nread = [" << json(s.read_dir).dump() << "]\nstart = \"session\"\n\n"
       << "[[tool]]\nid = \"bench\"\ndecision = \"allow\"\ntool = [\"mcp:b:" << s.tool << "\"]\n";
}

// (b) moat's client, a private moatd, the server in the session's sandbox.
std::vector<double> through_moatd(const Server& s, int calls, const std::string& scratch,
                                  const std::string& audit) {
  write_user_layer(s, scratch + "/user");
  fs::create_directories(scratch + "/system");
  fs::create_directories(scratch + "/ws");
  auto client = moat::agent::MoatdClient::spawn_private(
      {"--audit-dir", audit, "--system-policy-dir", scratch + "/system",
       "--user-policy-dir", scratch + "/user"});
  if (!client) {
    std::fprintf(stderr, "  moatd: %s\n", client.error().message().c_str());
    return {};
  }
  moat::agent::WelcomeError why;
  auto welcome = (*client)->hello(scratch + "/ws", true, &why);
  if (!welcome) {
    std::fprintf(stderr, "  hello: %s: %s\n", why.code.c_str(), why.message.c_str());
    return {};
  }
  int n = 0;
  auto ms = time_calls(calls, [&]() -> std::string {
    const auto r = (*client)->call("c" + std::to_string(++n), "mcp__b__" + s.tool, s.args, {}, {});
    return r.is_error ? r.to_json().dump() : "";
  });
  (*client)->bye();
  return ms;
}

void report(const Server& s, const std::vector<double>& a, const std::vector<double>& b) {
  if (a.empty() || b.empty()) {
    std::printf("%s: not measured (see above)\n", s.label.c_str());
    return;
  }
  const double ma = percentile(a, 50), mb = percentile(b, 50);
  std::printf("%s, %zu calls each:\n", s.label.c_str(), a.size());
  std::printf("  bare client       median %.3f ms, p90 %.3f ms\n", ma, percentile(a, 90));
  std::printf("  through moatd     median %.3f ms, p90 %.3f ms\n", mb, percentile(b, 90));
  std::printf("  overhead          %+.3f ms at the median (x%.1f); target at most +2 ms: %s\n",
              mb - ma, mb / ma, mb - ma <= 2.0 ? "met" : "MISSED");
}

// The test server copied where the sandbox's uid may read and run it.
Server test_server(const std::string& scratch) {
  const std::string dir = scratch + "/srv";
  const std::string bin = moat::e2e::copy_mcp_test_server(dir);
  fs::permissions(scratch, fs::perms::all, fs::perm_options::add);
  return {"test server echo", {bin}, dir, "echo", {{"text", "ping"}}};
}

}  // namespace

int main(int argc, char** argv) {
  if (std::getenv("MOATD_BIN") == nullptr)
    setenv("MOATD_BIN", (build_root() / "sandbox/moatd").c_str(), 1);
  const int calls = argc > 1 ? std::max(1, std::atoi(argv[1])) : 500;
  moat::e2e::TempDir dir;
  const std::string audit = argc > 2 ? std::string(argv[2]) : dir.path() + "/audit";
  std::printf("audit logs in %s\n", audit.c_str());
  std::vector<Server> servers = {test_server(dir.path())};
  const std::string everything = (build_root() / "mcp-servers").string();
  const std::string js =
      everything + "/node_modules/@modelcontextprotocol/server-everything/dist/index.js";
  if (::access("/usr/bin/node", X_OK) == 0 && fs::exists(js))
    servers.push_back({"server-everything echo", {"/usr/bin/node", js, "stdio"}, everything,
                       "echo", {{"message", "ping"}}});
  else
    std::printf("server-everything: not installed at %s (or no /usr/bin/node): skipped\n",
                js.c_str());
  int i = 0;
  for (const Server& s : servers) {
    const auto a = bare(s, calls);
    const std::string run = "/run" + std::to_string(++i);
    const auto b = through_moatd(s, calls, dir.path() + run, audit + run);
    report(s, a, b);
  }
  return 0;
}
