// agent/cli_sandbox.cc: `moat sandbox exec` (one command through moatd, the session init and
// a worker, judged as a tool call's command is, on the caller's own fds), `moat sandbox
// explain-filter` and `moat doctor`.
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "agent/cli.h"
#include "agent/client.h"
#include "agent/home_workspace.h"
#include "agent/moatd_start.h"
#include "agent/terminal_relay.h"
#include "base/byte_strings.h"
#include "base/log.h"
#include "base/sys.h"
#include "base/workspace_path.h"
#include "policy/ceilings.h"
#include "sandbox/doctor.h"
#include "sandbox/exec_call.h"
#include "sandbox/protocol.h"
#include "sandbox/seccomp_policy.h"
#include "tools/registry.h"

namespace moat::agent {
namespace {

using nlohmann::json;

// Exit statuses of `moat sandbox exec`, as timeout(1) and env(1) use them; any other status
// is the command's own (128+N: signal N).
constexpr int kExecTimedOut = 124;
constexpr int kExecMoatFailed = 125;
constexpr int kExecRefused = 126;
constexpr int kExecNotFound = 127;

struct ExecOptions {
  std::vector<std::string> argv;
  std::string workspace;
  std::string cwd;
  double timeout_s = 0;
  std::string connect;
  bool verbose = false;
  std::vector<std::string> setenv_pairs;  // NAME VALUE, NAME VALUE, ...
  std::vector<std::string> env_names;
  bool network = false;
  // --allow-home-workspace: -C at or above the home (refused without it)
  bool allow_home_workspace = false;
  std::vector<std::string> ro_binds, binds;  // SRC DST, SRC DST, ...
  // Each occurrence of a two-word option that did not bring its two words, as typed
  // ("--setenv 'FOO=bar'"): CLI11 stops an option's words at "--" or the next option and says
  // nothing, so `--setenv FOO=bar --` would set nothing and `--setenv A --setenv B` A=B.
  std::vector<std::string> malformed;
  MoatdPassThrough moatd;
};

// moat's own line: stderr only, never the command's stdout.
int moat_failed(int code, const std::string& why) {
  std::fprintf(stderr, "moat sandbox exec: %s\n", why.c_str());
  return code;
}

// --timeout's seconds as typed: "3600s", "0.5s".
std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%gs", s);
  return buf;
}

// resources.wall_time as moatd's welcome states it ({value, layer, file}):
// "resources.wall_time = 10m (builtin layer, /usr/share/moat/policy/default.toml)".
std::string wall_time_named(const json& w) {
  if (!w.is_object() || !w.contains("value")) return "resources.wall_time";
  return "resources.wall_time = " +
         policy::format_ceiling("wall_time", w.value("value", std::int64_t{0})) + " (" +
         w.value("layer", "") + " layer, " + w.value("file", "") + ")";
}

// One line when --timeout asks for more than the session's wall time: moatd ends the call at
// the ceiling, not at --timeout (sandbox/session.cc's call_timeout).
void tell_timeout_cap(double timeout_s, const json& w) {
  const std::int64_t wall = w.is_object() ? w.value("value", std::int64_t{0}) : 0;
  if (timeout_s <= 0 || wall <= 0 || timeout_s <= static_cast<double>(wall)) return;
  moat_failed(0, "--timeout " + seconds_text(timeout_s) + " capped to " +
                     policy::format_ceiling("wall_time", wall) + " by " + wall_time_named(w));
}

// Which limit ended a timed-out call (details.limit): the call's own --timeout, or the policy's.
std::string timed_out_why(const json& details, double timeout_s, const json& wall_time) {
  if (details.value("limit", "") == "timeout")
    return "timed out after " + seconds_text(timeout_s) + " (--timeout): the command was killed";
  return "timed out at " + wall_time_named(wall_time) + ": the command was killed";
}

// The exit status a result stands for (sandbox/exec_call.h's details); `timed_out_note` is said
// when the call timed out.
int exit_status_of(const tools::ToolResult& r, bool verbose, const std::string& timed_out_note) {
  const json& d = r.details.is_object() ? r.details : json::object();
  std::string text;
  for (const auto& b : r.content)
    if (b.value("type", "") == "text") text += b.value("text", "");
  if (d.contains("signal") && d["signal"].is_number_integer()) {
    const bool timed_out = d.value("timedOut", false);
    if (timed_out) moat_failed(0, timed_out_note);
    else if (verbose) moat_failed(0, "killed by signal " + d["signal"].dump());
    return timed_out ? kExecTimedOut : 128 + (d["signal"].get<int>() & 0x7f);
  }
  if (d.contains("exitCode") && d["exitCode"].is_number_integer()) {
    if (verbose) moat_failed(0, "exit status " + d["exitCode"].dump());
    return d["exitCode"].get<int>() & 0xff;
  }
  const std::string failed = d.value("failed", "");
  if (failed == sandbox::kExecFailedPolicy) return moat_failed(kExecRefused, text);
  if (failed == sandbox::kExecFailedExec)
    return moat_failed(d.value("errno", 0) == ENOENT ? kExecNotFound : kExecRefused, text);
  return moat_failed(kExecMoatFailed, text.empty() ? "moatd gave no result" : text);
}

// A command that ran, and a program it started that the policy refused (its exec failed
// EPERM, which the command may report only as "Operation not permitted"): moat says which and
// by which rule on stderr. Programs that ran flagged (a rule asks about them; nobody could be
// asked) are said with -v; the audit log has both.
void tell_exec_notes(const tools::ToolResult& r, bool verbose) {
  if (!r.details.is_object() || r.is_error) return;
  const bool refused = r.details.value("refusedExecs", 0) > 0;
  const bool flagged = r.details.value("flaggedExecs", 0) > 0;
  if (!refused && !(verbose && flagged)) return;
  for (const auto& b : r.content) {
    std::string text = b.value("text", "");
    const bool is_refusal = text.find("[moat refused") != std::string::npos;
    if (is_refusal ? !refused : !verbose) continue;
    while (!text.empty() && text.front() == '\n') text.erase(0, 1);
    moat_failed(0, text);
  }
}

// A command that signal N killed: this process dies of N too (no core file of its own), so
// whoever waits for it sees what it would have seen running the command itself (a shell's
// "Terminated", a parent's WIFSIGNALED), as timeout(1) does. 128+N when N does not kill.
int die_like(const tools::ToolResult& r, int status) {
  const json& d = r.details;
  if (!d.is_object() || !d.contains("signal") || d.value("timedOut", false)) return status;
  const int sig = status - 128;
  const rlimit no_core{0, 0};
  ::setrlimit(RLIMIT_CORE, &no_core);
  ::signal(sig, SIG_DFL);
  sigset_t just;
  sigemptyset(&just);
  sigaddset(&just, sig);
  ::sigprocmask(SIG_UNBLOCK, &just, nullptr);
  std::fflush(stderr);
  ::raise(sig);
  return status;
}

// --setenv NAME VALUE and --env NAME (the caller's value; nothing when it is unset).
std::map<std::string, std::string> command_env(const ExecOptions& o) {
  std::map<std::string, std::string> env;
  for (const std::string& name : o.env_names)
    if (const char* v = std::getenv(name.c_str())) env[name] = v;
  for (std::size_t i = 0; i + 1 < o.setenv_pairs.size(); i += 2)
    env[o.setenv_pairs[i]] = o.setenv_pairs[i + 1];
  return env;
}

// Every option's words as the person meant them, or a usage error naming the option: a
// two-word option with one word, a variable name sh(1) would not take (`--setenv FOO=bar`).
Result<void> check_option_words(const ExecOptions& o) {
  if (!o.malformed.empty()) return fail(o.malformed.front());
  auto check_name = [](const char* opt, const std::string& name) -> Result<void> {
    if (sandbox::is_env_name(name)) return {};
    return fail(std::string(opt) + " " + moat::quoted(name) +
                ": not a variable name (letters, digits and '_', not starting with a digit); "
                "e.g. --setenv CI 1, --env TERM");
  };
  for (std::size_t i = 0; i < o.setenv_pairs.size(); i += 2)
    MOAT_TRY(check_name("--setenv", o.setenv_pairs[i]));
  for (const std::string& name : o.env_names) MOAT_TRY(check_name("--env", name));
  return {};
}

// --cwd inside the workspace, as its help says: a relative DIR is taken from the workspace, not
// from the caller's directory; an absolute one as given; the directory by its real path.
Result<std::string> start_dir(const std::string& cwd, const std::string& workspace) {
  if (cwd.empty()) return std::string();
  const std::string given = cwd[0] == '/' ? cwd : workspace + "/" + cwd;
  const std::string opt = "--cwd " + moat::quoted(cwd);
  const std::string from = cwd[0] == '/' ? "" : " (a relative --cwd is taken from the workspace)";
  auto dir = real_path(given);
  if (!dir) return fail(Error{dir.error().code, opt + ": " + moat::quoted(given) + from});
  std::error_code ec;
  if (!std::filesystem::is_directory(*dir, ec))
    return fail(Error{ENOTDIR, opt + ": " + moat::quoted(given) + from});
  return dir;
}

Result<sandbox::ExecMsg> exec_message(const ExecOptions& o, const std::string& workspace) {
  MOAT_TRY(check_option_words(o));
  sandbox::ExecMsg m;
  m.id = "exec-1";
  m.argv = o.argv;
  m.env = command_env(o);
  m.timeout_s = o.timeout_s;
  MOAT_ASSIGN_OR_RETURN(m.cwd, start_dir(o.cwd, workspace));
  MOAT_TRY(sandbox::ExecMsg::from_json(m.to_json()));
  return m;
}

// fds 0-2 open before moat opens any of its own: a closed one would be taken by moat's socket to
// moatd (the command then read moat's own connection as its stdin; moatd called it "a socket"),
// and inside, by the first file the command opens. A closed one gets /dev/null, as systemd's
// StandardInput=null and nohup(1) give it; bwrap leaves it closed. Returns what it did.
std::string open_closed_stdio() {
  std::string note;
  for (int fd = 0; fd < 3; ++fd) {
    if (::fcntl(fd, F_GETFD) >= 0 || errno != EBADF) continue;
    auto null = sys::open_path("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
    if (!null) continue;  // then moatd names what the fd became
    if (null->get() == fd) {
      ::fcntl(fd, F_SETFD, 0);  // lowest free fd: it is already in place; keep it across exec
      (void)null->release();
    } else {
      ::dup2(null->get(), fd);
    }
    note += std::string(note.empty() ? "" : ", ") + (fd == 0 ? "stdin" : fd == 1 ? "stdout" : "stderr");
  }
  return note.empty() ? "" : note + " closed: the command gets /dev/null instead";
}

// What a session's hello and exec frame carry, and how the exec frame is sent.
struct ExecStart {
  const ExecOptions& o;
  const std::string& workspace;
  const std::vector<sandbox::BindMount>& binds;
  const sandbox::ExecMsg& m;
  const int (&stdio)[3];
};

// The hello, and the exec frame with `stdio`: when `pipelined`, right behind the hello as
// version 2 lets it, not waiting for the welcome (one round trip less: docs/protocol.md); else
// after the welcome, as version 1. A refused hello is what is reported (in *why), never the
// exec's failure: moatd closes the exec's fds with the connection. Without --network the
// session has no network whatever the policy grants.
Result<Welcome> hello_then_exec(MoatdClient& client, const ExecStart& e, bool pipelined,
                                WelcomeError* why) {
  client.set_hello_version(pipelined ? sandbox::kPipelinedExecVersion
                                     : sandbox::kMinProtocolVersion);
  MOAT_TRY(client.send_hello(e.workspace, /*headless=*/true, why,
                             e.o.network ? sandbox::NetworkRequest::kOn
                                         : sandbox::NetworkRequest::kOff,
                             e.binds));
  Result<void> sent = pipelined ? client.send_exec(e.m, e.stdio) : Result<void>{};
  MOAT_ASSIGN_OR_RETURN(Welcome welcome, client.await_welcome(why));
  if (!pipelined) sent = client.send_exec(e.m, e.stdio);
  if (!sent) return fail(sent.error().with_context("sending the exec frame"));
  return welcome;
}

// The welcome of a session whose exec frame is sent: pipelined behind the hello. A moatd of
// protocol version 1 (one not yet upgraded) refuses that (sandbox::is_pipelining_refused):
// then `start` gives a new connection (a private moatd, a new one), which says version 1 and
// sends the exec after the welcome. A moatd of version 2 costs no round trip more; one of
// version 1 a refused hello.
Result<Welcome> start_exec(std::unique_ptr<MoatdClient>& client, const ExecStart& e,
                           const std::function<Result<std::unique_ptr<MoatdClient>>()>& start) {
  WelcomeError why;
  auto welcome = hello_then_exec(*client, e, /*pipelined=*/true, &why);
  if (welcome || !sandbox::is_pipelining_refused(sandbox::ErrorMsg{why.message, why.code, ""}))
    return welcome;
  client.reset();  // its private moatd, if any, has exited
  MOAT_ASSIGN_OR_RETURN(client, start());
  return hello_then_exec(*client, e, /*pipelined=*/false, &why);
}

// The command's result, a terminal among fds 0-2 relayed meanwhile (terminal_relay.h). The
// relay starts only now, after the welcome: moat's own lines before it reach a terminal that is
// not yet raw, and the command's first output waits in the pty.
tools::ToolResult await_relaying(MoatdClient& client, TerminalRelay* relay, const std::string& id) {
  if (relay != nullptr) {
    if (auto started = relay->start(); !started)  // moat's bye then ends the command
      return sandbox::exec_not_run(started.error().message(), sandbox::kExecFailedSandbox);
  }
  tools::ToolResult result = client.await_exec(id);
  if (relay != nullptr) relay->finish();
  return result;
}

// --ro-bind and --bind as hello asks for them: the source by its real path (moatd refuses a
// symlink at any component, so the text it checks is where the bytes are), the target as given,
// which must already be absolute and normalised.
Result<std::vector<sandbox::BindMount>> bind_mounts(const ExecOptions& o) {
  std::vector<sandbox::BindMount> out;
  auto add = [&](const std::vector<std::string>& pairs, bool writable) -> Result<void> {
    const char* opt = writable ? "--bind" : "--ro-bind";
    for (std::size_t i = 0; i + 1 < pairs.size(); i += 2) {
      auto source = real_path(pairs[i]);
      if (!source)
        return fail(source.error().with_context(std::string(opt) + " " + moat::quoted(pairs[i])));
      if (!is_normalized_absolute(pairs[i + 1]))
        return fail(std::string(opt) + " " + moat::quoted(pairs[i]) + " " +
                    moat::quoted(pairs[i + 1]) +
                    ": the target must be an absolute path without '.', '..', '//' or a "
                    "trailing '/' (e.g. /opt/data)");
      out.push_back({*source, pairs[i + 1], writable});
    }
    return {};
  };
  MOAT_TRY(add(o.ro_binds, false));
  MOAT_TRY(add(o.binds, true));
  if (out.size() > sandbox::kMaxBinds)
    return fail("at most " + std::to_string(sandbox::kMaxBinds) +
                " --ro-bind and --bind options together");
  return out;
}

int run_exec(const ExecOptions& o) {
  const std::string closed = open_closed_stdio();  // first: before any fd of moat's own
  if (o.verbose && !closed.empty()) moat_failed(0, closed);
  if (o.argv.empty())
    return moat_failed(kExecMoatFailed,
                       "no command given (usage: moat sandbox exec -- CMD ARGS...)");
  auto workspace = canonical_workspace(o.workspace);
  if (!workspace) return moat_failed(kExecMoatFailed, workspace.error().message());
  if (const std::string risk = home_workspace_risk(*workspace); !risk.empty()) {
    if (!o.allow_home_workspace)  // nobody is asked in exec: it is refused as a headless run
      return moat_failed(kExecMoatFailed, "-C: " + risk +
                                              "; pass --allow-home-workspace to run there "
                                              "anyway, or -C a project directory");
    moat_failed(0, "warning: " + risk);
  }
  auto message = exec_message(o, *workspace);
  if (!message) return moat_failed(kExecMoatFailed, message.error().message());
  auto binds = bind_mounts(o);
  if (!binds) return moat_failed(kExecMoatFailed, binds.error().message());
  // The person typed this command: their own moatd judges the line as theirs (only the
  // organisation's and a --policy file's rules bind it): a private one, or the resident one
  // once it has checked this process is not an agent loop (sandbox/resident_peer.h). A shared
  // moatd (--connect) judges it as any client's line: its connections may be agents'.
  MoatdPassThrough moatd = o.moatd;
  moatd.typed_exec = o.connect.empty();
  auto start = [&] { return start_moatd(o.connect, moatd); };
  auto client = start();
  if (!client) return moat_failed(kExecMoatFailed, client.error().message());
  // The caller's fds 0-2 go to the command as they are; a terminal among them as a pty's slave.
  auto relay = TerminalRelay::open_if_terminal();
  if (!relay) return moat_failed(kExecMoatFailed, relay.error().message());
  int stdio[3] = {0, 1, 2};
  if (*relay) (*relay)->stdio(stdio);
  auto welcome = start_exec(*client, ExecStart{o, *workspace, *binds, *message, stdio}, start);
  if (!welcome) return moat_failed(kExecMoatFailed, welcome.error().message());
  if (o.verbose) moat_failed(0, "session " + welcome->session + ", audit log " + welcome->audit);
  const json wall_time = welcome->policy.value("wallTime", json::object());
  tell_timeout_cap(o.timeout_s, wall_time);
  const tools::ToolResult result = await_relaying(**client, relay->get(), message->id);
  client->reset();  // bye, and a private moatd has written session.end and exited
  tell_exec_notes(result, o.verbose);
  const json details = result.details.is_object() ? result.details : json::object();
  return die_like(result, exit_status_of(result, o.verbose,
                                         timed_out_why(details, o.timeout_s, wall_time)));
}

// A repeatable two-word option (NAME VALUE, SRC DST), taken one occurrence at a time
// (trigger_on_parse): its two words go to `pairs`; an occurrence with fewer (`--setenv FOO=bar
// --`, `--ro-bind SRC --`, `--setenv A --setenv B`) goes to o.malformed as typed, a usage error.
void add_pair_option(CLI::App& cmd, ExecOptions& o, const std::string& name,
                     std::vector<std::string>& pairs, const std::string& words,
                     const std::string& help) {
  // The help's own example ("e.g. --setenv CI 1"), so the usage error shows the same one.
  const std::string example = help.substr(help.rfind("e.g. "));
  auto take = [&o, &pairs, name, words, example](const CLI::results_t& given) {
    if (given.size() == 2) {
      pairs.insert(pairs.end(), given.begin(), given.end());
      return true;
    }
    std::string typed = name;
    for (const std::string& w : given) typed += " " + moat::quoted(w);
    o.malformed.push_back(typed + ": " + name + " takes two words, " + words + ", at each use; " +
                          example);
    return true;
  };
  cmd.add_option(name, CLI::callback_t(take), help)
      ->type_name(words)
      ->expected(2)
      ->allow_extra_args(false)
      ->trigger_on_parse()
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
}

// What the command may reach beyond the workspace: the network, and host paths (bubblewrap's
// --ro-bind and --bind).
void add_reach_options(CLI::App& cmd, ExecOptions& o) {
  cmd.add_flag("--network", o.network,
               "Reach the network through moatd's proxy, host by host as the policy's "
               "[[network]] rules allow (HTTP_PROXY and the like are set for the command); "
               "refused when the policy allows no connection. Without it the command has no "
               "network; e.g. --network -- curl https://pypi.org/");
  add_pair_option(cmd, o, "--ro-bind", o.ro_binds, "SRC DST",
                  "Show the host's SRC read-only at DST (repeatable); the policy must allow "
                  "reading SRC and DST, paths it hides stay hidden inside; e.g. --ro-bind "
                  "~/datasets /data");
  add_pair_option(cmd, o, "--bind", o.binds, "SRC DST",
                  "Show the host's SRC read-write at DST (repeatable); the policy must allow "
                  "writing SRC and DST, and what it protects stays read-only inside; e.g. "
                  "--bind /tmp/cache /tmp/cache");
}

void add_exec_command(CLI::App& sandbox, int& exit_code) {
  auto eo = std::make_shared<ExecOptions>();
  auto* exec = sandbox.add_subcommand(
      "exec",
      "Run one command in a fresh session sandbox, through moatd, with this terminal's "
      "stdin, stdout and stderr");
  exec->footer(
      "The command runs as argv (no shell) with the caller's own stdin, stdout and stderr; a "
      "terminal is given to it through a pseudo-terminal moat relays. What you typed is your "
      "decision: only the organisation's system layer and a --policy file can refuse it (with "
      "--connect, the shared moatd judges it as any client's command). What it starts is "
      "judged at exec time like a tool call's programs: a deny holds; a program an ask rule "
      "meets runs and is flagged in the audit log (unless the organisation says deny); a "
      "program moat refused is named on stderr.\n"
      "Exit status: the command's own; 128+N when signal N killed it; 124 when --timeout (or "
      "the policy's wall time) killed it; 125 when moat failed (bad options, the sandbox); 126 "
      "when the policy refused the command (the rule is named on stderr) or it cannot be run; "
      "127 when it does not exist. moat writes nothing to stdout, and to stderr only on a "
      "failure (or with -v).\n"
      "Examples:\n"
      "  moat sandbox exec -- make test\n"
      "  moat sandbox exec -C repo --cwd sub --timeout 60 -- ./run_tests.sh\n"
      "  moat sandbox exec --setenv CI 1 --env TERM -- python3 -c 'print(6*7)'\n"
      "  moat sandbox exec --permissive -- sh -c 'make && ./deploy.sh'\n"
      "  moat sandbox exec --no-default-policy --user-policy-dir ./ci-policy -- make check\n"
      "  moat sandbox exec --policy no-network-tools.toml -- ./run_tests.sh\n"
      "  moat sandbox exec --ro-bind ~/datasets /data --bind /tmp/cache /tmp/cache -- make\n"
      "  moat sandbox exec --network -- pip download requests\n"
      "    (the last needs a [[network]] allow for pypi.org and files.pythonhosted.org)");
  exec->add_option("--workspace,-C", eo->workspace, "Workspace bound read-write (default: .)");
  exec->add_option("--cwd", eo->cwd,
                   "Directory the command starts in, inside the workspace: a relative DIR is "
                   "taken from the workspace (default: the workspace); e.g. --cwd src");
  exec->add_option("--timeout", eo->timeout_s,
                   "Kill the command after this many seconds (exit 124); e.g. --timeout 30")
      ->check(non_negative<double>());
  exec->add_flag("--allow-home-workspace", eo->allow_home_workspace,
                 "Run with the workspace at or above the home directory (-C ~, -C /): refused "
                 "without it, as the command could change everything under the home");
  add_pair_option(*exec, *eo, "--setenv", eo->setenv_pairs, "NAME VALUE",
                  "Set NAME to VALUE for the command (repeatable); e.g. --setenv CI 1");
  exec->add_option("--env", eo->env_names,
                   "Pass the variable NAME from this environment (repeatable; nothing else "
                   "of it is passed); e.g. --env TERM")
      ->allow_extra_args(false);
  add_reach_options(*exec, *eo);
  exec->add_option("--connect", eo->connect, "Use a running moatd at this socket path");
  exec->add_flag("-v,--verbose", eo->verbose,
                 "Say on stderr which session ran it and how it ended");
  add_moatd_pass_through(*exec, eo->moatd);
  exec->add_flag("--permissive", eo->moatd.permissive,
                 "Also allow every program the command starts that the built-in, user or "
                 "project rules would refuse or flag at exec time, keeping every sandbox layer: "
                 "the policy still governs paths and limits, and what the organisation's system "
                 "layer or a --policy file denies or asks stays refused; e.g. --permissive -- "
                 "sh -c 'make && ./deploy.sh'");
  exec->add_option("command", eo->argv, "The command and its arguments (after --)")->required();
  // Everything from the command on is its own: without this CLI11 took a "--" that followed a
  // two-value option (--setenv A B -- sh -c ...) as the end of that option's values, and the
  // command's own -c as moat's.
  exec->positionals_at_end(true);
  exec->callback([eo, &exit_code] { exit_code = run_exec(*eo); });
}

void add_explain_filter_command(CLI::App& sandbox) {
  auto network = std::make_shared<bool>(false);
  auto* explain = sandbox.add_subcommand(
      "explain-filter", "Print the workers' seccomp filter: every set, entry, action and reason");
  set_exit_codes(*explain, {kExitDone, kExitUsage});
  explain->add_flag("--network", *network, "The filter of a session the policy grants network");
  explain->callback([network] { std::fputs(sandbox::explain_filter(*network).c_str(), stdout); });
}

// Prints the doctor's report; false when a layer every session needs is missing.
bool print_doctor_report(bool as_json) {
  json report = sandbox::doctor_report();
  report["moatd"] = sandbox::probe_moatd(find_moatd());  // where `moat run` would start it
  bool ready = false;
  const std::string verdict = sandbox::doctor_verdict(report, ready);
  if (as_json) {
    json with_verdict = report;
    with_verdict["verdict"] = {{"ready", ready}, {"text", verdict}};
    std::printf("%s\n", dump_lossless(with_verdict, 2).c_str());  // a reason may name any path
  } else {
    for (const auto& [layer, v] : report.items()) {
      if (!v.is_object()) {
        std::printf("%-18s %s\n", layer.c_str(), v.dump().c_str());
        continue;
      }
      const bool ok = v.value("ok", false);
      std::string extra = v.contains("abi") ? " (ABI " + v["abi"].dump() + ")" : "";
      std::printf("%-18s %-4s %s%s\n", layer.c_str(), ok ? "yes" : "NO",
                  v.value("reason", "").c_str(), extra.c_str());
    }
  }
  if (!as_json) std::printf("%s\n", verdict.c_str());  // one line a person or a script reads
  return ready;
}

}  // namespace

int parse_error_exit_code(const CLI::App& app) {
  try {
    return app.get_subcommand("sandbox")->get_subcommand("exec")->parsed() ? kExecMoatFailed
                                                                           : kExitUsage;
  } catch (const CLI::Error&) {  // no such subcommand: this file registers both
    return kExitUsage;
  }
}

void add_sandbox_commands(CLI::App& app, int& exit_code) {
  auto* sandbox = app.add_subcommand("sandbox", "Run commands in the sandbox and inspect it");
  sandbox->require_subcommand(1);
  // exec passes its command's status through: the group's footer says so, not only 0 and 2.
  sandbox->footer(
      "Exit codes: 2 usage error (no subcommand); `sandbox exec` exits with its command's own "
      "status, 128+N when signal N killed it, 124 timed out, 125 moat failed (bad options, the "
      "sandbox), 126 refused by the policy or not runnable, 127 not found (moat sandbox exec "
      "--help); explain-filter 0 done, 2 usage error.");
  add_exec_command(*sandbox, exit_code);
  add_explain_filter_command(*sandbox);

  auto as_json = std::make_shared<bool>(false);
  auto* doctor =
      app.add_subcommand("doctor", "Report which isolation layers this machine supports");
  set_exit_codes(*doctor, {kExitDone, kExitUsage, kExitSandbox});
  doctor->add_flag("--json", *as_json, "Print the report as JSON");
  // Exit 3 when a layer every session needs is missing, so scripts can check the machine.
  doctor->callback([as_json, &exit_code] {
    if (!print_doctor_report(*as_json)) exit_code = kExitSandbox;
  });
}

}  // namespace moat::agent
