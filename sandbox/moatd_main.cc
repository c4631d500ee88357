// sandbox/moatd_main.cc: moatd, the supervisor: serves one private connection (--fd) or
// many clients on a Unix socket (--socket).
#include <malloc.h>
#include <openssl/crypto.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <CLI/CLI.hpp>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <iterator>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "base/host_defaults.h"
#include "base/moat_dirs.h"
#include "policy/layer.h"
#include "policy/network.h"
#include "sessions/audit.h"
#include "sessions/audit_access.h"
#include "sandbox/cgroup.h"
#include "sandbox/listen_socket.h"
#include "sandbox/moatd_config.h"
#include "sandbox/session.h"
#include "sandbox/session_pool.h"
#include "sandbox/supervisor.h"
#include "sandbox/supervisor_options.h"

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

// The command line, as parsed.
struct Flags {
  std::string socket_path;
  int fd = -1;
  int console_fd = -1;
  std::string audit_dir;
  std::string audit_key;
  std::string sessions_dir;
  std::string system_policy_dir = moat::dirs::system_policy();
  std::string user_policy_dir;
  unsigned uid = moat::kUnprivilegedUid, gid = moat::kUnprivilegedGid;
  std::vector<std::string> allow_without;
  std::vector<std::string> policy_files;
  std::vector<std::string> test_resolve;
  bool no_default_policy = false;
  bool permissive = false;
  double client_stall_timeout_s = moat::sandbox::SupervisorOptions{}.client_stall_timeout_s;
  bool typed_exec = false;
  int mcp_restart_backoff_ms = 0;
  bool owner_only = false;  // a resident moatd (docs/moatd.md)
  double idle_exit_s = 0;   // a resident moatd (docs/moatd.md)
  std::size_t pool = moat::sandbox::kDefaultPoolSize;  // sessions built ahead (--socket only)
};

// A resident moatd: one user's, started by moat on demand (agent/resident.h).
void add_resident_options(CLI::App& app, Flags& f) {
  auto* owner = app.add_flag("--owner-only", f.owner_only,
                             "Serve only clients of moatd's own uid (root's too are refused): a "
                             "user's resident moatd");
  auto* idle = app.add_option("--idle-exit", f.idle_exit_s,
                              "Exit once no client has been connected for this many seconds "
                              "(the socket path goes first)")
                   ->check(CLI::PositiveNumber);
  for (auto* o : {owner, idle}) o->excludes("--fd");
  app.parse_complete_callback([&f] {
    if (f.typed_exec && f.fd < 0 && !f.owner_only)
      throw CLI::ValidationError("--typed-exec",
                                 "needs --fd (a private moatd) or --owner-only (a resident one): "
                                 "a shared moatd's clients may be other users' agents");
  });
}

void add_serving_options(CLI::App& app, Flags& f) {
  auto* sock_opt =
      app.add_option("--socket", f.socket_path, "Serve many clients on this Unix socket");
  app.add_option("--fd", f.fd, "Serve one client on this inherited connected socket (moat run)")
      ->excludes(sock_opt);
  app.add_option("--console-fd", f.console_fd,
                 "With --fd: the session's console channel, the only one that answers 'ask' "
                 "(moat run's console process holds its other end)")
      ->needs("--fd");
  app.add_option("--client-stall-timeout", f.client_stall_timeout_s,
                 "Disconnect a client that reads none of moatd's frames for this many seconds "
                 "(its calls are cancelled)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  // With --fd, or a resident moatd's --owner-only: a shared moatd's clients include other
  // users' agent loops, which send exec frames too.
  app.add_flag("--typed-exec", f.typed_exec,
               "With --fd: the client is the person's own CLI (moat sandbox exec), so an exec "
               "frame's command line is the person's decision; only the system layer's and a "
               "--policy file's denies and asks bind it (what it starts is judged as usual). "
               "With --owner-only: so for a client whose hello asks it and whose process has "
               "neither no_new_privs nor a seccomp filter (an agent loop has both)");
  add_resident_options(app, f);
}

void add_file_options(CLI::App& app, Flags& f) {
  app.add_option("--audit-dir", f.audit_dir,
                 "Directory of the audit logs (default /var/log/moat with --socket as root but "
                 "not --owner-only, "
                 "else $XDG_STATE_HOME/moat/audit)");
  app.add_option("--sessions-dir", f.sessions_dir,
                 "moat's session files, read-only in any sandbox whose workspace holds them "
                 "like moatd's other directories (default $MOAT_SESSIONS_DIR, else "
                 "$XDG_STATE_HOME/moat/sessions)");
  app.add_option("--audit-key", f.audit_key,
                 "Ed25519 private key (PEM) that signs audit checkpoints; created if missing, "
                 "with its public half written next to it as .pub (default "
                 "<audit dir>/audit-key.pem)");
  app.add_option("--system-policy-dir", f.system_policy_dir,
                 "Organisation policy directory (root-owned; default $MOAT_POLICY_DIR, else "
                 "/etc/moat/policy.d)")
      ->capture_default_str();
  app.add_option("--user-policy-dir", f.user_policy_dir,
                 "User policy directory (default $MOAT_USER_POLICY_DIR, else "
                 "$XDG_CONFIG_HOME/moat/policy.d)");
  app.add_option("--policy", f.policy_files,
                 "An extra policy file, layered last; it may only narrow what the others allow")
      ->check(CLI::ExistingFile);
  app.add_flag("--no-default-policy", f.no_default_policy,
               "Leave out the built-in default policy (the system and user layers still load)");
  app.add_flag("--permissive", f.permissive,
               "Allow every command but what the system layer or a --policy file denies or asks "
               "(session mode 'permissive'); paths, resources and every sandbox layer as before");
}

void add_sandbox_options(CLI::App& app, Flags& f) {
  app.add_option("--uid", f.uid, "Host uid the sandbox's users map to when moatd runs as root")
      ->capture_default_str();
  app.add_option("--gid", f.gid, "Host gid the sandbox's groups map to when moatd runs as root")
      ->capture_default_str();
  // A CLI::Validator: an entry that is not NAME=ADDRESS (an IP literal) stops moatd at start.
  app.add_option("--test-resolve", f.test_resolve,
                 "Tests only: the network proxy resolves NAME to ADDRESS (NAME=ADDRESS)")
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            const auto eq = v.find('=');
            if (eq == std::string::npos || eq == 0 ||
                !moat::policy::is_ip_literal(v.substr(eq + 1)))
              return "expected NAME=ADDRESS with an IP address, got '" + v + "'";
            return {};
          },
          "NAME=ADDRESS"));
  app.add_option("--pool", f.pool,
                 "Sessions kept built ahead of their hello, up to where the workspace is known "
                 "(0: none); each serves one hello and is destroyed with it. Not with --fd")
      ->capture_default_str();
  app.add_option("--test-mcp-restart-backoff", f.mcp_restart_backoff_ms,
                 "Tests only: the first wait, in ms, before an MCP server that ended is started "
                 "again (each further one doubles it; default 200)")
      ->check(CLI::Range(1, 10000));
  app.add_option("--allow-without", f.allow_without,
                 "Let sessions run without this sandbox layer (seccomp, landlock, idmap, "
                 "cgroup; never a namespace); recorded in every session.start")
      ->check(CLI::IsMember(std::vector<std::string>(std::begin(moat::sandbox::kSkippableLayers),
                                                     std::end(moat::sandbox::kSkippableLayers))));
}

moat::sandbox::SupervisorOptions options_from(const Flags& f) {
  moat::sandbox::SupervisorOptions options;
  // A resident moatd (--owner-only) is one user's, root's too: its logs are that user's.
  options.system_daemon = !f.socket_path.empty() && ::geteuid() == 0 && !f.owner_only;
  // Absolute, so the policy's $AUDIT_DIR (the supervisor passes it) and the sandbox's
  // protected paths name this one.
  options.audit_dir = std::filesystem::absolute(
      f.audit_dir.empty() ? moat::sessions::default_audit_dir(options.system_daemon) : f.audit_dir);
  options.audit_key = f.audit_key;
  options.sessions_dir = f.sessions_dir;
  options.policy.system_dir = f.system_policy_dir;
  options.policy.user_dir = f.user_policy_dir;
  options.policy.extra_files = f.policy_files;
  options.policy.use_builtin_default = !f.no_default_policy;
  options.permissive = f.permissive;
  options.unprivileged_uid = f.uid;
  options.typed_exec = f.typed_exec;
  options.mcp_restart_backoff_ms = f.mcp_restart_backoff_ms;
  options.typed_exec_by_peer = f.typed_exec && f.fd < 0;  // per connection (resident_peer.h)
  options.owner_only = f.owner_only;
  options.idle_exit_s = f.idle_exit_s;
  options.unprivileged_gid = f.gid;
  options.allow_without.insert(f.allow_without.begin(), f.allow_without.end());
  options.client_stall_timeout_s = f.client_stall_timeout_s;
  for (const auto& entry : f.test_resolve) {
    const auto eq = entry.find('=');
    options.net_resolve_overrides[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  return options;
}

int serve_private(moat::sandbox::Supervisor& supervisor, const Flags& f) {
  // Its own session and process group (moat run also starts it so): Ctrl-C or a SIGTERM
  // to the client's group must not kill moatd before it has written session.end.
  if (::getsid(0) != ::getpid()) (void)::setsid();
  g_private_fd = f.fd;
  struct sigaction sa {};
  sa.sa_handler = on_private_signal;
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(sig, &sa, nullptr);
  supervisor.serve_connection(moat::UniqueFd(f.fd), moat::UniqueFd(f.console_fd));
  return 0;
}

int serve_shared(moat::sandbox::Supervisor& supervisor,
                 const moat::sandbox::ListeningSocket& sock) {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
  std::fprintf(stderr, "moatd: listening on %s\n", sock.path().c_str());
  std::fflush(stderr);
  auto r = supervisor.serve_socket(sock, g_stop);
  if (!r) {
    std::fprintf(stderr, "moatd: %s\n", r.error().message().c_str());
    return 3;
  }
  return 0;
}

// The socket to serve on: systemd's (socket activation, which takes neither --socket nor
// --fd), or --socket's path, claimed here: a second moatd on a live socket is refused before
// it could take the path over. The exit code on failure, else 0.
int listening_socket(std::optional<moat::sandbox::ListeningSocket>& activated, Flags& f) {
  if (activated) {
    if (!f.socket_path.empty() || f.fd >= 0) {
      std::fprintf(stderr, "moatd: a socket from systemd (LISTEN_FDS) takes neither --socket "
                           "nor --fd; the unit's ListenStream= names the path\n");
      return 2;
    }
    f.socket_path = activated->path();  // a root moatd on it is a system moatd
    return 0;
  }
  if (f.fd >= 0) return 0;
  auto claimed = moat::sandbox::ListeningSocket::claim(f.socket_path, 64);
  if (!claimed) {
    std::fprintf(stderr, "moatd: %s\n", claimed.error().message().c_str());
    return 3;
  }
  activated.emplace(std::move(*claimed));
  return 0;
}

// moatd.toml's quotas bind a moatd serving a socket (a private one serves its own user once).
// A file that does not parse stops moatd: a typo must not leave a quota unset. Exit code or 0.
int read_moatd_config(const Flags& f, moat::sandbox::SupervisorOptions& options) {
  if (f.fd >= 0) return 0;
  auto config = moat::sandbox::load_moatd_config(moat::sandbox::moatd_config_path());
  if (!config) {
    std::fprintf(stderr, "moatd: %s\n", config.error().message().c_str());
    return 2;
  }
  options.moatd_config = std::move(*config);
  return 0;
}

// A system moatd's audit folder: --audit-dir, else MOAT_AUDIT_DIR, else moatd.toml's [system]
// audit_dir, else /var/log/moat; in it one folder per user, readable by that user and root
// (sessions/audit_access.h). One it cannot prepare (a filesystem without ACLs) stops moatd:
// its users could not read their logs. Exit code or 0.
int prepare_system_audit(const Flags& f, moat::sandbox::SupervisorOptions& options) {
  if (!options.system_daemon) return 0;
  if (f.audit_dir.empty() && moat::dirs::nonempty_env("MOAT_AUDIT_DIR").empty() &&
      !options.moatd_config.audit_dir.empty())
    options.audit_dir = options.moatd_config.audit_dir;
  if (auto r = moat::sessions::prepare_system_audit_dir(options.audit_dir); !r) {
    std::fprintf(stderr, "moatd: audit folder: %s\n", r.error().message().c_str());
    return 2;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // Before any thread: a block of 256 KiB or more (a large frame's buffer, its parsed copy) is
  // a mapping of its own, unmapped when freed. glibc's default threshold rises to 32 MiB after
  // the first such free, and then large frames were carved from per-thread heaps that kept the
  // memory: 20 partial frames left moatd 490 MB larger after they closed (issue 26 item 11).
  mallopt(M_MMAP_THRESHOLD, 256 << 10);
  // libcrypto's first call, so that it registers no atexit handler: OPENSSL_cleanup frees what
  // the process's end frees anyway, and a private moatd's client waits for that end (0.25 ms of
  // CPU per run, issue 30). Nothing is written at cleanup; the config file is still read.
  OPENSSL_init_crypto(OPENSSL_INIT_NO_ATEXIT, nullptr);
  // First, while fd 3 is still the one systemd passed and before any thread could read the
  // environment: the LISTEN_* variables are removed here, so no child ever sees them.
  auto activated = moat::sandbox::ListeningSocket::from_systemd();
  if (!activated) {
    std::fprintf(stderr, "moatd: socket activation: %s\n", activated.error().message().c_str());
    return 2;
  }
  CLI::App app{"moatd: the moat supervisor (policy, audit, sandboxed execution)"};
  // `moat doctor` starts moatd with --version to check it is there, runs, and is moat's own.
  app.set_version_flag("--version", std::string("moatd ") + MOAT_VERSION);
  app.footer(
      "Exit codes: 0 served until asked to stop, 2 usage or configuration error, 3 could not "
      "listen or serve.");
  Flags flags;
  add_serving_options(app, flags);
  add_file_options(app, flags);
  add_sandbox_options(app, flags);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  if (flags.socket_path.empty() && flags.fd < 0 && !*activated) {
    std::fprintf(stderr, "moatd: one of --socket PATH or --fd N (or a socket from systemd) is "
                         "required\n");
    return 2;
  }
  // First of what a session waits for, once moatd is to serve (a process exiting waits for the
  // warm-up's write, so `--version` and a usage error do not start it): a cgroup attach's grace
  // period (cgroup.h) runs out while moatd starts and reads its hello, not once the keeper
  // joins its cgroup.
  moat::sandbox::start_attach_warmup();
  // The built-in default policy's parse, which a private moatd's hello would do first thing,
  // on the second core while moatd starts and reads its hello (joined on every way out).
  std::jthread builtin_parse;
  try {
    builtin_parse = std::jthread([] { moat::policy::parse_builtin_default(); });
  } catch (const std::system_error&) {
    // No thread to spare: the hello parses it.
  }
  if (int rc = listening_socket(*activated, flags); rc != 0) return rc;
  // A client that hangs up mid-frame must not kill the supervisor.
  ::signal(SIGPIPE, SIG_IGN);
  // Nor an audit log at a file size limit: its append fails (EFBIG) and refuses the call.
  // (Workers reset every signal before exec: sandboxed code still gets SIGXFSZ.)
  ::signal(SIGXFSZ, SIG_IGN);
  // Sessions built ahead only in a moatd serving a socket: a private moatd serves one session,
  // which a pool would build twice. Declared first, so it outlives every session it served.
  moat::sandbox::SessionPool pool(flags.fd >= 0 ? 0 : flags.pool);
  moat::sandbox::SupervisorDeps deps;
  deps.create_session = [&pool](const moat::sandbox::SessionConfig& c) { return pool.create(c); };
  moat::sandbox::SupervisorOptions options = options_from(flags);
  if (int rc = read_moatd_config(flags, options); rc != 0) return rc;
  if (int rc = prepare_system_audit(flags, options); rc != 0) return rc;
  moat::sandbox::Supervisor supervisor(std::move(options), std::move(deps));
  return flags.fd >= 0 ? serve_private(supervisor, flags) : serve_shared(supervisor, **activated);
}
