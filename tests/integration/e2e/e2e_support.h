// tests/integration/e2e/e2e_support.h: running moat and moatd as real processes from tests.
#pragma once

#include <sys/types.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

namespace moat::e2e {

struct Run {
  int exit_code = -1;
  std::string out;  // stdout and stderr, interleaved
};

std::string env_or(const char* name, const std::string& fallback);
std::string moat_bin();
std::string moatd_bin();
std::string source_root();
// The whole file ("" when it cannot be read).
std::string read_file(const std::string& path);
// Every line of the audit log at `path`, parsed; a line that is not JSON is a discarded value,
// so a test can assert that each is an object.
std::vector<nlohmann::json> records_of(const std::string& path);
// The records of `records` whose type is `type`, in order.
std::vector<nlohmann::json> of_type(const std::vector<nlohmann::json>& records,
                                    const std::string& type);

// A fresh directory under /tmp, removed by the destructor.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Runs argv to completion with extra environment variables; captures the output.
// `stdin_data` is what the process reads on stdin (empty: /dev/null).
Run run(const std::vector<std::string>& argv, const std::vector<std::string>& extra_env = {},
        int timeout_s = 120, const std::string& stdin_data = "");
// What a run wrote to each stream, apart.
struct SplitRun {
  int exit_code = -1;
  std::string out, err;
};
// Runs argv to completion with stdout and stderr captured apart, each into a file (so a
// process the run leaves behind cannot hold the capture open). stdin: `stdin_data` on a pipe
// that is then closed, or with `hold_stdin_open`, a pipe this side keeps open until the run
// has ended (empty data and not held: /dev/null).
SplitRun run_split(const std::vector<std::string>& argv, const std::vector<std::string>& extra_env,
                   int timeout_s, const std::string& stdin_data = "", bool hold_stdin_open = false);
// Starts argv in the background; returns its pid. Output goes to `log_path`.
pid_t start(const std::vector<std::string>& argv, const std::string& log_path,
            const std::vector<std::string>& extra_env = {});
int wait_exit(pid_t pid, int timeout_s);
// Starts argv in the background (its own process group) with these fds as its stdin, stdout
// and stderr; returns its pid.
pid_t start_with_stdio(const std::vector<std::string>& argv,
                       const std::vector<std::string>& extra_env, int in_fd, int out_fd,
                       int err_fd);

// A 127.0.0.1 port nothing listens on now (the kernel's pick for a socket then closed), and
// whether something accepts connections on one: for a test's own server on the host.
int free_loopback_port();
bool listening_on_loopback(int port);

// The MCP test server (tests/support/mcp_test_server.cc) as meson builds it, beside moatd's
// build tree.
std::string mcp_test_server_bin();
// Copies it into `dir` (made if missing) and makes `dir` readable and searchable by every uid
// (a root moatd's sandbox runs as another); the copy's path.
std::string copy_mcp_test_server(const std::string& dir);

// Whether this host can build a session sandbox (root, or unprivileged user namespaces).
bool sandbox_available(std::string* why);

// Copies examples/untrusted-calc into dir/workspace as a fresh git repository.
std::string make_example_workspace(const std::string& dir);

// A raw protocol connection to a moatd socket.
class RawClient {
 public:
  explicit RawClient(const std::string& socket_path);
  ~RawClient();
  bool connected() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  void send_bytes(const std::string& bytes);
  void send_json(const nlohmann::json& m);
  // The next frame, or a JSON null when the connection closed (or timeout).
  nlohmann::json read_frame(int timeout_ms = 20000);
  // The next frame that is not a call's progress (output chunks, the 'decided' frame moatd
  // sends before a call runs) nor an MCP server's unasked mcp_status: a call's result (or
  // bye's answer), or null as read_frame.
  nlohmann::json read_result(int timeout_ms = 20000);
  bool closed_by_peer(int timeout_ms = 5000);

 private:
  int fd_ = -1;
  std::string buf_;
};

std::string frame_of(const std::string& payload);

// One headless bash call of `command` in a fresh session over `workspace`, on a moatd of its
// own (its socket, audit folder and log under `scratch`) whose system layer is the folder
// `system_dir` and whose user layer is empty: the call's result. `audit` gets the session's
// audit log. The moatd is stopped before it returns.
nlohmann::json one_headless_call(const std::string& scratch, const std::string& workspace,
                                 const std::string& system_dir, const std::string& command,
                                 std::string* audit);

// Polls `what` every 20 ms until it holds or `timeout` passes; the caller asserts the result.
template <typename F>
bool eventually(F what, std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (!what()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

}  // namespace moat::e2e
