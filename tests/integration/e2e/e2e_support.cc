// tests/integration/e2e/e2e_support.cc: process and socket helpers for the end-to-end tests.
#include "e2e_support.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "sandbox/protocol.h"

namespace moat::e2e {

namespace fs = std::filesystem;

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : fallback;
}
std::string moat_bin() { return env_or("MOAT_BIN", "agent/moat"); }
std::string moatd_bin() { return env_or("MOATD_BIN", "sandbox/moatd"); }
std::string source_root() { return env_or("MOAT_SOURCE_ROOT", MOAT_SOURCE_ROOT); }

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<nlohmann::json> records_of(const std::string& path) {
  std::ifstream in(path);
  std::vector<nlohmann::json> out;
  for (std::string line; std::getline(in, line);)
    out.push_back(nlohmann::json::parse(line, nullptr, false));
  return out;
}

std::vector<nlohmann::json> of_type(const std::vector<nlohmann::json>& records,
                                    const std::string& type) {
  std::vector<nlohmann::json> out;
  for (const nlohmann::json& r : records)
    if (r.is_object() && r.value("type", "") == type) out.push_back(r);
  return out;
}

TempDir::TempDir() {
  std::string tmpl = env_or("TMPDIR", "/tmp") + "/moat-e2e-XXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr) std::abort();
  chmod(tmpl.c_str(), 0755);
  path_ = tmpl;
}
TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

namespace {

pid_t spawn(const std::vector<std::string>& argv, int out_fd,
            const std::vector<std::string>& extra_env, int in_fd = -1, int err_fd = -1) {
  pid_t pid = fork();
  if (pid == 0) {
    dup2(out_fd, 1);
    dup2(err_fd >= 0 ? err_fd : out_fd, 2);
    int in = in_fd >= 0 ? in_fd : open("/dev/null", O_RDONLY);
    dup2(in, 0);
    for (const auto& kv : extra_env) putenv(const_cast<char*>(kv.c_str()));
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    setpgid(0, 0);
    execvp(args[0], args.data());
    _exit(127);
  }
  return pid;
}

}  // namespace

int wait_exit(pid_t pid, int timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  int status = 0;
  for (;;) {
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (std::chrono::steady_clock::now() > deadline) {
      kill(-pid, SIGKILL);
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return -2;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + WTERMSIG(status);
}

Run run(const std::vector<std::string>& argv, const std::vector<std::string>& extra_env,
        int timeout_s, const std::string& stdin_data) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) std::abort();
  int in[2] = {-1, -1};
  if (!stdin_data.empty()) {
    if (pipe2(in, O_CLOEXEC) != 0) std::abort();
    (void)!write(in[1], stdin_data.data(), stdin_data.size());  // small: fits the pipe
    close(in[1]);
  }
  pid_t pid = spawn(argv, p[1], extra_env, in[0]);
  close(p[1]);
  if (in[0] >= 0) close(in[0]);
  Run r;
  std::thread reader([&] {
    char buf[8192];
    ssize_t n;
    while ((n = read(p[0], buf, sizeof buf)) > 0) r.out.append(buf, static_cast<size_t>(n));
  });
  r.exit_code = wait_exit(pid, timeout_s);
  reader.join();
  close(p[0]);
  return r;
}

SplitRun run_split(const std::vector<std::string>& argv, const std::vector<std::string>& extra_env,
                   int timeout_s, const std::string& stdin_data, bool hold_stdin_open) {
  TempDir dir;
  const std::string out_path = dir.path() + "/out", err_path = dir.path() + "/err";
  const int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  const int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  int in[2] = {-1, -1};
  if (!stdin_data.empty() || hold_stdin_open) {
    if (pipe2(in, O_CLOEXEC) != 0) std::abort();
    (void)!write(in[1], stdin_data.data(), stdin_data.size());  // small: fits the pipe
    if (!hold_stdin_open) close(in[1]);
  }
  const pid_t pid = spawn(argv, out, extra_env, in[0], err);
  close(out);
  close(err);
  if (in[0] >= 0) close(in[0]);
  SplitRun r;
  r.exit_code = wait_exit(pid, timeout_s);
  if (hold_stdin_open) close(in[1]);
  r.out = read_file(out_path);
  r.err = read_file(err_path);
  return r;
}

pid_t start_with_stdio(const std::vector<std::string>& argv,
                       const std::vector<std::string>& extra_env, int in_fd, int out_fd,
                       int err_fd) {
  return spawn(argv, out_fd, extra_env, in_fd, err_fd);
}

int free_loopback_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

bool listening_on_loopback(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  const bool up = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(fd);
  return up;
}

pid_t start(const std::vector<std::string>& argv, const std::string& log_path,
            const std::vector<std::string>& extra_env) {
  int fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  pid_t pid = spawn(argv, fd, extra_env);
  close(fd);
  return pid;
}

std::string mcp_test_server_bin() {
  return (fs::path(moatd_bin()).parent_path().parent_path() / "tests/unit/tools/mcp_test_server")
      .string();
}

std::string copy_mcp_test_server(const std::string& dir) {
  fs::create_directories(dir);
  fs::permissions(dir, fs::perms::all, fs::perm_options::add);
  fs::copy_file(mcp_test_server_bin(), dir + "/mcp_test_server",
                fs::copy_options::overwrite_existing);
  return dir + "/mcp_test_server";
}

bool sandbox_available(std::string* why) {
  if (geteuid() == 0) return true;
  std::ifstream f("/proc/sys/user/max_user_namespaces");
  long n = 0;
  f >> n;
  if (n <= 0) {
    *why = "needs root or unprivileged user namespaces (max_user_namespaces is 0)";
    return false;
  }
  pid_t pid = fork();
  if (pid == 0) _exit(unshare(CLONE_NEWUSER) == 0 ? 0 : 1);
  int st = 0;
  waitpid(pid, &st, 0);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    *why = "needs root or unprivileged user namespaces (unshare(CLONE_NEWUSER) failed)";
    return false;
  }
  return true;
}

std::string make_example_workspace(const std::string& dir) {
  const std::string ws = dir + "/workspace";
  fs::copy(source_root() + "/examples/untrusted-calc", ws, fs::copy_options::recursive);
  for (const char* d : {"__pycache__", "calc/__pycache__", "tests/__pycache__"})
    fs::remove_all(ws + "/" + d);
  run({"git", "-C", ws, "init", "-q"});
  run({"git", "-C", ws, "add", "-A"});
  run({"git", "-C", ws, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-qm",
       "init"});
  return ws;
}

RawClient::RawClient(const std::string& socket_path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  socket_path.copy(addr.sun_path, sizeof addr.sun_path - 1);
  for (int i = 0; i < 100; ++i) {
    fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) return;
    close(fd_);
    fd_ = -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}
RawClient::~RawClient() {
  if (fd_ >= 0) close(fd_);
}
void RawClient::send_bytes(const std::string& bytes) {
  (void)!::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
}
void RawClient::send_json(const nlohmann::json& m) { send_bytes(sandbox::encode_frame(m)); }

nlohmann::json RawClient::read_frame(int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    if (buf_.size() >= 4) {
      const auto* p = reinterpret_cast<const unsigned char*>(buf_.data());
      const size_t n = (size_t{p[0]} << 24) | (size_t{p[1]} << 16) | (size_t{p[2]} << 8) | p[3];
      if (buf_.size() >= 4 + n) {
        auto j = nlohmann::json::parse(buf_.substr(4, n), nullptr, false);
        buf_.erase(0, 4 + n);
        return j;
      }
    }
    const int left = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                          deadline - std::chrono::steady_clock::now())
                                          .count());
    if (left <= 0) return nullptr;
    pollfd pfd{fd_, POLLIN, 0};
    if (poll(&pfd, 1, left) <= 0) return nullptr;
    char buf[65536];
    ssize_t n = read(fd_, buf, sizeof buf);
    if (n <= 0) return nullptr;
    buf_.append(buf, static_cast<size_t>(n));
  }
}

nlohmann::json RawClient::read_result(int timeout_ms) {
  nlohmann::json r = read_frame(timeout_ms);
  while (r.is_object() && (r.value("type", "") == "progress" || r.value("type", "") == "mcp_status"))
    r = read_frame(timeout_ms);
  return r;
}

bool RawClient::closed_by_peer(int timeout_ms) {
  pollfd pfd{fd_, POLLIN, 0};
  if (poll(&pfd, 1, timeout_ms) <= 0) return false;
  char c;
  return read(fd_, &c, 1) == 0;
}

nlohmann::json one_headless_call(const std::string& scratch, const std::string& workspace,
                                 const std::string& system_dir, const std::string& command,
                                 std::string* audit) {
  const std::string socket = scratch + "/" + fs::path(system_dir).filename().string() + ".sock";
  const std::string no_user_layer = scratch + "/no-user-layer";
  fs::create_directories(no_user_layer);
  const pid_t moatd = start({moatd_bin(), "--socket", socket, "--audit-dir", scratch + "/audit",
                             "--system-policy-dir", system_dir, "--user-policy-dir", no_user_layer},
                            scratch + "/moatd.log");
  (void)eventually([&] { return fs::exists(socket); });
  nlohmann::json result;
  {
    RawClient c(socket);
    c.send_json({{"type", "hello"}, {"version", 1}, {"workspace", workspace}, {"headless", true}});
    const nlohmann::json welcome = c.read_frame();
    if (audit != nullptr) *audit = welcome.value("audit", "");
    c.send_json({{"type", "call"},
                 {"id", "c1"},
                 {"tool", "bash"},
                 {"arguments", {{"command", command}}}});
    result = c.read_result(120000);
    c.send_json({{"type", "bye"}});
    c.read_frame();
  }
  kill(moatd, SIGTERM);
  wait_exit(moatd, 10);
  return result;
}

std::string frame_of(const std::string& payload) {
  const auto n = static_cast<uint32_t>(payload.size());
  std::string out;
  out.push_back(static_cast<char>(n >> 24));
  out.push_back(static_cast<char>(n >> 16));
  out.push_back(static_cast<char>(n >> 8));
  out.push_back(static_cast<char>(n));
  return out + payload;
}

}  // namespace moat::e2e
