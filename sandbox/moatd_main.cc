// sandbox/moatd_main.cc: moatd, the supervisor: serves one private connection (--fd) or
// many clients on a Unix socket (--socket).
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <CLI/CLI.hpp>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <iterator>
#include <string>
#include <vector>

#include "base/host_defaults.h"
#include "base/moat_dirs.h"
#include "sessions/audit.h"
#include "sandbox/session.h"
#include "sandbox/supervisor.h"

namespace {

std::atomic<bool> g_stop{false};
int g_private_fd = -1;

void on_signal(int) { g_stop.store(true); }

// A private moatd asked to stop ends its session as if the client hung up: shutdown(2) is
// async-signal-safe, and the serving loop then writes session.end and removes its
// placeholders on its own thread.
void on_private_signal(int) {
  if (g_private_fd >= 0) ::shutdown(g_private_fd, SHUT_RD);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"moatd: the moat supervisor (policy, audit, sandboxed execution)"};
  app.footer(
      "Exit codes: 0 served until asked to stop, 2 usage or configuration error, 3 could not "
      "listen or serve.");
  std::string socket_path;
  int fd = -1;
  int console_fd = -1;
  std::string audit_dir;
  std::string audit_key;
  std::string sessions_dir;
  std::string system_policy_dir = moat::dirs::kSystemPolicy;
  std::string user_policy_dir;
  unsigned uid = moat::kUnprivilegedUid, gid = moat::kUnprivilegedGid;
  std::vector<std::string> allow_without;
  std::vector<std::string> policy_files;
  double client_stall_timeout_s = 60;
  auto* sock_opt = app.add_option("--socket", socket_path, "Serve many clients on this Unix socket");
  app.add_option("--fd", fd, "Serve one client on this inherited connected socket (moat run)")
      ->excludes(sock_opt);
  app.add_option("--console-fd", console_fd,
                 "With --fd: the session's console channel, the only one that answers 'ask' "
                 "(moat run's console process holds its other end)")
      ->needs("--fd");
  app.add_option("--audit-dir", audit_dir,
                 "Directory of the audit logs (default /var/log/moat with --socket as root, "
                 "else $XDG_STATE_HOME/moat/audit)");
  app.add_option("--sessions-dir", sessions_dir,
                 "moat's session files, read-only in any sandbox whose workspace holds them "
                 "like moatd's other directories (default $MOAT_SESSIONS_DIR, else "
                 "$XDG_STATE_HOME/moat/sessions)");
  app.add_option("--audit-key", audit_key,
                 "Ed25519 private key (PEM) that signs audit checkpoints; created if missing, "
                 "with its public half written next to it as .pub (default "
                 "<audit dir>/audit-key.pem)");
  app.add_option("--system-policy-dir", system_policy_dir,
                 "Organisation policy directory (root-owned)")->capture_default_str();
  app.add_option("--user-policy-dir", user_policy_dir,
                 "User policy directory (default $XDG_CONFIG_HOME/moat/policy.d)");
  app.add_option("--uid", uid, "Host uid the sandbox's users map to when moatd runs as root")
      ->capture_default_str();
  app.add_option("--gid", gid, "Host gid the sandbox's groups map to when moatd runs as root")
      ->capture_default_str();
  app.add_option("--allow-without", allow_without,
                 "Let sessions run without this sandbox layer (seccomp, landlock, idmap, "
                 "cgroup; never a namespace); recorded in every session.start")
      ->check(CLI::IsMember(std::vector<std::string>(std::begin(moat::sandbox::kSkippableLayers),
                                                     std::end(moat::sandbox::kSkippableLayers))));
  app.add_option("--policy", policy_files,
                 "An extra policy file, layered last; it may only narrow what the others allow")
      ->check(CLI::ExistingFile);
  app.add_option("--client-stall-timeout", client_stall_timeout_s,
                 "Disconnect a client that reads none of moatd's frames for this many seconds "
                 "(its calls are cancelled)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  if (socket_path.empty() && fd < 0) {
    std::fprintf(stderr, "moatd: one of --socket PATH or --fd N is required\n");
    return 2;
  }
  // A client that hangs up mid-frame must not kill the supervisor.
  ::signal(SIGPIPE, SIG_IGN);
  // Nor an audit log at a file size limit: its append fails (EFBIG) and refuses the call.
  // (Workers reset every signal before exec: sandboxed code still gets SIGXFSZ.)
  ::signal(SIGXFSZ, SIG_IGN);

  moat::sandbox::SupervisorOptions options;
  options.system_daemon = !socket_path.empty() && ::geteuid() == 0;
  // Absolute, so the policy's $AUDIT_DIR and the sandbox's protected paths name this one.
  options.audit_dir = std::filesystem::absolute(
      audit_dir.empty() ? moat::sessions::default_audit_dir(options.system_daemon) : audit_dir);
  options.audit_key = audit_key;
  options.sessions_dir = sessions_dir;
  options.policy.path_vars["AUDIT_DIR"] = options.audit_dir;
  options.policy.system_dir = system_policy_dir;
  options.policy.user_dir = user_policy_dir;
  options.policy.extra_files = policy_files;
  options.unprivileged_uid = uid;
  options.unprivileged_gid = gid;
  options.allow_without.insert(allow_without.begin(), allow_without.end());
  options.client_stall_timeout_s = client_stall_timeout_s;
  moat::sandbox::Supervisor supervisor(options);

  if (fd >= 0) {
    // Its own session and process group (moat run also starts it so): Ctrl-C or a SIGTERM
    // to the client's group must not kill moatd before it has written session.end.
    if (::getsid(0) != ::getpid()) (void)::setsid();
    g_private_fd = fd;
    struct sigaction sa {};
    sa.sa_handler = on_private_signal;
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(sig, &sa, nullptr);
    supervisor.serve_connection(moat::UniqueFd(fd), moat::UniqueFd(console_fd));
    return 0;
  }
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
  // A second moatd on a live socket is refused here, before it could take the path over.
  auto listening = moat::sandbox::ListeningSocket::claim(socket_path, 64);
  if (!listening) {
    std::fprintf(stderr, "moatd: %s\n", listening.error().message().c_str());
    return 3;
  }
  std::fprintf(stderr, "moatd: listening on %s\n", socket_path.c_str());
  std::fflush(stderr);
  auto r = supervisor.serve_socket(*listening, g_stop);
  if (!r) {
    std::fprintf(stderr, "moatd: %s\n", r.error().message().c_str());
    return 3;
  }
  return 0;
}
