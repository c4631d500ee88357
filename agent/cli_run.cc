// agent/cli_run.cc: `moat run`: spawn (or connect to) moatd, drop privileges, run the loop.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include "agent/cli.h"
#include "agent/client.h"
#include "agent/console.h"
#include "agent/events.h"
#include "agent/home_workspace.h"
#include "agent/loop.h"
#include "agent/model_open.h"
#include "agent/moatd_start.h"
#include "agent/providers/config.h"
#include "agent/providers/factory.h"
#include "agent/providers/prompt.h"
#include "agent/replay_provider.h"
#include "agent/run_mode.h"
#include "agent/rpc_session.h"
#include "agent/steering_input.h"
#include "agent/text_events.h"
#include "agent/trust_prompt.h"
#include "agent/unprivileged.h"
#include "base/host_defaults.h"
#include "base/log.h"
#include "base/moat_dirs.h"
#include "base/stop_flags.h"
#include "base/workspace_path.h"
#include "policy/layer.h"
#include "policy/mcp_servers.h"
#include "sessions/context.h"
#include "sessions/json_util.h"
#include "sessions/store.h"

namespace moat::agent {
namespace {

using nlohmann::json;

struct RunOptions {
  std::string model;
  std::string workspace;
  std::string connect;
  std::vector<std::string> task_words;
  std::string task_file;
  bool headless = false;
  bool interactive = false;
  bool print = false;        // -p: text mode, the final answer alone on stdout
  bool json_events = false;  // --json: events on stdout (docs/events.md)
  bool rpc = false;          // --rpc: commands on stdin, events on stdout (docs/events.md)
  bool ephemeral = false;    // no session file
  // --allow-home-workspace: a headless run may work in (or above) the home
  bool allow_home_workspace = false;
  LoopConfig loop;
  unsigned uid = kUnprivilegedUid, gid = kUnprivilegedGid;
  std::string sessions_dir;
  std::string resume;
  std::string fork;
  bool continue_latest = false;
  std::vector<std::string> follow_ups;
  MoatdPassThrough moatd;
};

std::string sessions_dir_of(const RunOptions& o) {
  return o.sessions_dir.empty() ? sessions::default_sessions_dir() : o.sessions_dir;
}

// The session to append to: a new one, or --resume / --fork / --continue of an earlier one.
// On resume, tool calls that never got a result (the agent was killed mid-call) are
// answered with error results first, so the context is valid for the provider; on a fork or
// a branch from ID@ENTRY the call may have finished in the source, so its answer says only
// that its result is not part of this conversation.
Result<std::unique_ptr<sessions::SessionStore>> open_session(const RunOptions& o,
                                                             const std::string& dir,
                                                             const std::string& workspace) {
  std::unique_ptr<sessions::SessionStore> store;
  if (o.ephemeral) return sessions::SessionStore::create_in_memory(workspace);
  const bool branched = !o.fork.empty() || o.resume.find('@') != std::string::npos;
  if (!o.fork.empty()) {
    MOAT_ASSIGN_OR_RETURN(store, sessions::fork_session(dir, o.fork, workspace));
  } else if (!o.resume.empty()) {
    MOAT_ASSIGN_OR_RETURN(store, sessions::resume_session(dir, o.resume));
  } else if (o.continue_latest) {
    MOAT_ASSIGN_OR_RETURN(store, sessions::continue_session(dir, workspace));
  } else {
    return sessions::SessionStore::create(dir, workspace);
  }
  MOAT_TRY(sessions::answer_dangling_calls(
      *store, branched ? sessions::Unanswered::kBranched : sessions::Unanswered::kInterrupted));
  return store;
}

// The person's cancel: Ctrl-C (SIGINT, through a SignalStop) and --rpc's abort.
RunCancel g_cancel;

// All of a stream, for a task on a pipe (`echo task | moat run -p`, `--task-file -`).
Result<std::string> read_all(std::istream& in, const std::string& what) {
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return fail(Error::from_errno("reading the task", EIO, what));
  return ss.str();
}

// The task: its words, else the file (- is stdin), else stdin when it is not a terminal. A
// task given as words never reads stdin, so a pipe left open cannot hold the run.
Result<std::string> read_task(const RunOptions& o) {
  std::string task;
  for (const auto& w : o.task_words) task += (task.empty() ? "" : " ") + w;
  if (!task.empty()) return task;
  if (o.task_file == "-" || (o.task_file.empty() && ::isatty(STDIN_FILENO) != 1)) {
    MOAT_ASSIGN_OR_RETURN(task, read_all(std::cin, "the task on stdin"));
  } else if (!o.task_file.empty()) {
    std::ifstream in(o.task_file);
    if (!in) return fail(Error::from_errno("open", errno, "task file " + o.task_file));
    MOAT_ASSIGN_OR_RETURN(task, read_all(in, "task file " + o.task_file));
  }
  if (task.find_first_not_of(" \t\r\n") == std::string::npos)
    return fail(
        std::string("no task given (pass it as words, --task-file FILE, --task-file - "
                    "or on stdin)"));
  return task;
}

int exit_code_for(LoopStop stop) {
  switch (stop) {
    case LoopStop::kDone:
    case LoopStop::kTerminated: return kExitDone;
    case LoopStop::kProviderError: return kExitProvider;
    case LoopStop::kStoreError: return kExitStore;
    default: return kExitTaskFailed;
  }
}

// Why a step ends the run before the loop: the exit code and what is said (Start::exit_with).
struct Stop {
  int code;
  std::string message;
};
// What a step of `moat run` opened for the next ones, or why the run ends there.
template <typename T>
using Step = std::variant<T, Stop>;
// A step that opens nothing: why the run ends there, if it does.
using Stopped = std::optional<Stop>;

// Decided before anything runs, so that a failure at any step is reported the same way.
struct Start {
  RunMode mode = RunMode::kPrint;  // decided once (run_mode.h)
  bool json = false;               // --json or --rpc: a failure to start is an event too
  std::unique_ptr<EventSink> events;  // text or JSON, from the start: a failure is an event too

  // A step's failure before the loop: said on stderr and, with --json, as the stream's events
  // (its first one carries the schema: no session header came before it).
  int exit_with(const Stop& stop) const {
    std::fprintf(stderr, "moat: %s\n", stop.message.c_str());
    if (json) {
      events->emit({{"type", "error"},
                    {"schema", kEventSchema},
                    {"during", "start"},
                    {"message", stop.message}});
      events->emit({{"type", "result"},
                    {"stop", "error"},
                    {"detail", stop.message},
                    {"exit_code", stop.code}});
    }
    return stop.code;
  }
};

// `--resume ID` goes on where the session ran: its own workspace, not the current directory
// (its files, its policy pins and its later `--continue` all live there). Gone, or another
// one named with -C: refused, pointing at --fork, which starts a copy anywhere.
Result<std::string> resumed_workspace(const RunOptions& o) {
  // Only the header is read: the session is loaded once, later, by open_session.
  MOAT_ASSIGN_OR_RETURN(
      sessions::SessionRef ref,
      sessions::resolve_session_ref(sessions_dir_of(o), o.resume.substr(0, o.resume.find('@'))));
  MOAT_ASSIGN_OR_RETURN(const std::string own, sessions::session_workspace(ref.path));
  auto workspace = canonical_workspace(own);
  if (!workspace)
    return fail("session " + ref.session_id + " ran in " + moat::quoted(own) + ", which is gone (" +
                workspace.error().message() + "); --fork " + o.resume +
                " -C DIR continues a copy of it in DIR");
  if (o.workspace.empty()) return workspace;
  MOAT_ASSIGN_OR_RETURN(const std::string asked, canonical_workspace(o.workspace));
  if (asked != *workspace)
    return fail("session " + ref.session_id + " ran in " + moat::quoted(*workspace) + ", not " +
                moat::quoted(asked) + "; --resume runs in the session's own workspace (leave out " +
                "-C), --fork " + o.resume + " -C DIR continues a copy of it in DIR");
  return workspace;
}

// A workspace at or above the home (issue 27 item 13): a warning where a person watches, a
// refusal in a headless run unless --allow-home-workspace says it is meant.
Stopped check_home_workspace(const RunOptions& o, RunMode mode, const std::string& workspace) {
  const std::string risk = home_workspace_risk(workspace);
  if (risk.empty()) return std::nullopt;
  if (is_headless(mode) && !o.allow_home_workspace)
    return Stop{kExitUsage, "-C: " + risk +
                                "; a headless run refuses it: pass --allow-home-workspace to "
                                "run there anyway, or -C a project directory"};
  std::fprintf(stderr, "moat: warning: %s\n", risk.c_str());
  return std::nullopt;
}

// What the run works on: where, and the task.
struct Inputs {
  std::string workspace;
  std::string task;  // empty when a resumed session goes on without a new one
};

// Usage errors come first, before anything is started.
Step<Inputs> read_inputs(const RunOptions& o, RunMode mode) {
  auto workspace = o.resume.empty() ? canonical_workspace(o.workspace) : resumed_workspace(o);
  const bool named = o.resume.empty() && !o.workspace.empty();  // the option to fix is -C
  if (!workspace) return Stop{kExitUsage, (named ? "-C: " : "") + workspace.error().message()};
  Inputs in{std::move(*workspace), {}};
  if (Stopped s = check_home_workspace(o, mode, in.workspace)) return *s;
  const bool resuming = !o.resume.empty() || !o.fork.empty() || o.continue_latest;
  if (mode == RunMode::kRpc && (!o.task_words.empty() || !o.task_file.empty()))
    return Stop{kExitUsage,
                "--rpc takes its tasks as prompt commands on stdin, not as words or "
                "--task-file"};
  if (mode == RunMode::kRpc) return in;
  // At a terminal the first prompt may wait for the person, as every later one does.
  if (mode == RunMode::kTerminal && o.task_words.empty() && o.task_file.empty()) return in;
  if (!resuming || !o.task_words.empty() || !o.task_file.empty()) {
    auto task = read_task(o);
    if (!task) return Stop{kExitUsage, task.error().message()};
    in.task = std::move(*task);
  }
  return in;
}

// The session file this run goes on from (--resume, --fork, --continue); "" for a new one.
Result<std::string> source_session_path(const RunOptions& o, const std::string& workspace) {
  const std::string& ref = o.resume.empty() ? o.fork : o.resume;
  if (!ref.empty()) {
    MOAT_ASSIGN_OR_RETURN(
        sessions::SessionRef named,
        sessions::resolve_session_ref(sessions_dir_of(o), ref.substr(0, ref.find('@'))));
    return named.path;
  }
  if (o.continue_latest) return sessions::find_latest_session(sessions_dir_of(o), workspace);
  return std::string();
}

// The model a session last ran with, as --model spells it ("" when it names none).
Result<std::string> session_model(const std::string& path) {
  MOAT_ASSIGN_OR_RETURN(auto store, sessions::SessionStore::open_read_only(path));
  const sessions::SessionContext ctx = sessions::build_context(*store);
  if (ctx.model.empty()) return std::string();
  return ctx.provider == "replay" ? "replay:" + ctx.model : ctx.provider + "/" + ctx.model;
}

// --model; else, going on from a session, the model it ran with; else config.toml's
// default_model.
Result<std::string> chosen_model(const RunOptions& o, const std::string& workspace,
                                 const providers::Config& config) {
  if (!o.model.empty()) return o.model;
  MOAT_ASSIGN_OR_RETURN(const std::string source, source_session_path(o, workspace));
  if (!source.empty()) {
    MOAT_ASSIGN_OR_RETURN(std::string model, session_model(source));
    if (!model.empty()) return model;
  }
  if (!config.default_model.empty()) return config.default_model;
  return fail(
      "no model: pass --model (-m) PROVIDER/MODEL-ID or replay:FILE, or set default_model in " +
      dirs::config_file());
}

// The provider, until its transport is loaded (finish_provider, while moatd starts).
Step<CheckedProvider> open_model(RunOptions& o, const std::string& workspace) {
  // config.toml is checked whichever model runs (replay too): an error in it is said now,
  // with its file:line:col, before anything starts, not at the first run that needs it.
  auto config = providers::load_config();
  if (!config) return Stop{kExitUsage, config.error().message()};
  auto model = chosen_model(o, workspace, *config);
  if (!model) return Stop{kExitUsage, model.error().message()};
  o.model = std::move(*model);
  auto checked = check_provider(o.model);
  if (!checked) return Stop{kExitUsage, checked.error().message()};
  if (o.loop.context_window == 0) o.loop.context_window = model_context_window(o.model);
  // Each request asks for the model's own output limit (a fixed 8192 went out whatever
  // config.toml said).
  if (const std::int64_t out = model_max_output(o.model); out > 0)
    o.loop.max_output_tokens = static_cast<int>(std::min<std::int64_t>(out, 1 << 30));
  return std::move(*checked);
}

// An interactive session gets a console channel to moatd, which only the console process
// will hold: a private moatd's second socketpair, or a shared moatd's one-time token.
// moatd builds the session (the policy, the audit log, the namespaces and cgroups: most of
// the start-up) while this process loads the provider's transport.
// A session with moatd, and the provider loaded meanwhile.
struct Started {
  std::unique_ptr<MoatdClient> client;
  Welcome welcome;
  std::unique_ptr<Provider> provider;
};

// hello.env: the values in this process's environment of the names that the system and user
// layers' MCP servers declare in `env` (docs/mcp.md). moatd gives each server only what its own
// trusted declaration names. When those layers do not load, none: moatd's load says why.
std::map<std::string, std::string> mcp_env_for_hello(const MoatdPassThrough& m) {
  policy::LoadOptions lo;
  lo.system_dir = dirs::or_default(m.system_policy_dir, dirs::system_policy());
  lo.user_dir = dirs::or_default(m.user_policy_dir, dirs::user_policy());
  lo.use_builtin_default = false;
  auto layers = policy::load_layers(lo, nullptr);
  auto servers = layers ? policy::effective_mcp_servers(*layers, nullptr)
                        : Result<std::vector<policy::McpServerConfig>>(fail(layers.error()));
  return servers ? policy::person_env(*servers) : std::map<std::string, std::string>{};
}

Step<Started> start_moatd_session(const RunOptions& o, RunMode mode, const std::string& workspace,
                                  CheckedProvider checked) {
  MoatdPassThrough pass = o.moatd;
  pass.sessions_dir = o.sessions_dir;  // so moatd keeps them out of the sandbox's reach
  auto client = start_moatd(o.connect, pass, !is_headless(mode));
  if (!client) return Stop{kExitSandbox, client.error().message()};
  Started s{std::move(*client), {}, nullptr};
  s.client->set_hello_env(mcp_env_for_hello(o.moatd));
  WelcomeError why;
  auto sent = s.client->send_hello(workspace, is_headless(mode), &why);
  auto provider = finish_provider(std::move(checked));
  if (!provider) return Stop{kExitUsage, provider.error().message()};
  s.provider = std::move(*provider);
  auto welcome = sent ? s.client->await_welcome(&why) : Result<Welcome>(fail(sent.error()));
  if (!welcome)
    return Stop{why.code == "sandbox" || why.code == "io" ? kExitSandbox : kExitUsage,
                welcome.error().message()};
  s.welcome = std::move(*welcome);
  // Attached now, before the loop exists: the token is spent before any model is asked.
  if (!s.welcome.console_token.empty()) {
    if (auto a = s.client->attach_console(s.welcome.session, s.welcome.console_token); !a)
      return Stop{kExitSandbox, a.error().message()};
  }
  return s;
}

json tool_names(const Welcome& w) {
  json names = json::array();
  for (const auto& t : w.tools) names.push_back(t.name);
  return names;
}

// The session file starts with the model, the tools moatd offers and the task.
Step<std::unique_ptr<sessions::SessionStore>> open_session_file(const RunOptions& o,
                                                                RunMode mode, const Inputs& in,
                                                                const Started& s) {
  auto store = open_session(o, sessions_dir_of(o), in.workspace);
  if (!store) return Stop{kExitUsage, store.error().message()};
  sessions::SessionStore& st = **store;
  (void)st.append(
      {{"type", "model_change"}, {"provider", s.provider->name()}, {"model", s.provider->model()}});
  (void)st.append({{"type", "tools_change"},
                   {"tools", tool_names(s.welcome)},
                   {"moatd_session", s.welcome.session}});
  // A terminal session's first prompt runs as every other.
  if (!in.task.empty() && mode != RunMode::kTerminal)
    (void)st.append(
        {{"type", "message"},
         {"message", {{"role", "user"}, {"content", {{{"type", "text"}, {"text", in.task}}}}}}});
  if (auto synced = st.sync(); !synced)
    return Stop{kExitUsage, "session file: " + synced.error().message()};
  return std::move(*store);
}

// This process stays the console (the terminal, the person's answers); the loop goes on in a
// child that holds neither, then drops its privileges.
Stopped split_off_the_loop(const RunOptions& o, RunMode mode, const std::string& task,
                           MoatdClient& client) {
  ConsoleOptions console;
  console.channel = client.take_console();
  console.mode = mode;
  if (mode == RunMode::kTerminal) console.first_prompt = task;
  console.moatd_pid = client.moatd_pid();
  console.loop_only_fds = {client.fd()};
  if (auto s = split_console_and_loop(std::move(console)); !s)
    return Stop{kExitSandbox, "could not start the loop process: " + s.error().message()};
  if (auto s = drop_to_unprivileged_loop({o.uid, o.gid}); !s)
    return Stop{kExitSandbox, "could not make the loop process unprivileged: " + s.error().message()};
  if (auto s = die_with_console(); !s) return Stop{kExitSandbox, s.error().message()};
  return std::nullopt;
}

// What the loop runs with, everything opened before privileges go.
struct LoopParts {
  RunMode mode;
  std::string workspace;
  Started moatd;  // the client, its welcome, the provider
  std::unique_ptr<sessions::SessionStore> store;
  std::string system_prompt;
  std::function<Result<ModelChoice>(const std::string&)> open_model;  // --rpc's set_model
};

// Where the run leaves its records: the session file (none with --ephemeral), the audit log.
json record_paths(const RunOptions& o, const LoopParts& p) {
  const std::string& audit = p.moatd.welcome.audit;
  return {{"session_file", o.ephemeral ? json(nullptr) : json(p.store->path())},
          {"audit_log", audit.empty() ? json(nullptr) : json(audit)}};
}

// The session header: what runs, where, under which layers (docs/events.md).
json session_fields(const RunOptions& o, const LoopParts& p) {
  const Welcome& w = p.moatd.welcome;
  json fields = record_paths(o, p);
  fields.update(json{{"id", p.store->id()},
                     {"moatd_session", w.session},
                     {"workspace", p.workspace},
                     {"model", o.model},
                     {"provider", p.moatd.provider->name()},
                     {"policy_layers", w.policy.value("layers", json::array())},
                     {"policy_hash", w.policy.value("hash", "")},
                     {"sandbox", w.sandbox},
                     {"tools", tool_names(w)},
                     {"interactive", !is_headless(p.mode)},
                     {"ephemeral", o.ephemeral}});
  if (!w.mcp_servers.empty()) {
    fields["mcp_servers"] = json::array();
    for (const auto& s : w.mcp_servers) fields["mcp_servers"].push_back(s.to_json());
  }
  return fields;
}

std::string system_prompt_for(const std::vector<tools::ToolSpec>& tools,
                              const std::string& workspace) {
  providers::PromptInputs in;
  in.tools = tools;
  in.workspace = workspace;
  in.project_docs = providers::find_project_docs(workspace);
  return providers::assemble_system_prompt(in);
}

// --rpc's set_model: models from config.toml as it is read now, before the loop loses the
// right to read it; their keys come from the environment, as --model's do.
std::function<Result<ModelChoice>(const std::string&)> model_opener() {
  auto config = std::make_shared<Result<providers::Config>>(providers::load_config());
  return [config](const std::string& spec) -> Result<ModelChoice> {
    ModelChoice c;
    if (spec.rfind("replay:", 0) == 0) {
      MOAT_ASSIGN_OR_RETURN(c.provider, make_replay_provider(spec.substr(7)));
      return c;
    }
    if (!*config) return fail(config->error());
    MOAT_ASSIGN_OR_RETURN(providers::ResolvedModel m, providers::resolve_model(spec, **config));
    MOAT_ASSIGN_OR_RETURN(c.provider, providers::make_provider(spec, **config));
    c.pricing = m.model.pricing;
    c.context_window = m.model.context_window;
    c.max_output = m.model.max_output;
    return c;
  };
}

// --rpc: the loop runs once per prompt command, on this one session (agent/rpc_session.h).
int serve_rpc_confined(const RunOptions& o, LoopParts& parts, RunEvents& events,
                       CallTool call_tool) {
  RpcSessionParts p;
  p.provider = std::move(parts.moatd.provider);
  p.model = o.model;
  p.store = parts.store.get();
  p.system_prompt = parts.system_prompt;
  p.tools = parts.moatd.welcome.tools;
  p.config = o.loop;
  p.call_tool = std::move(call_tool);
  p.events = &events;
  p.cancel = &g_cancel;
  p.records = record_paths(o, parts);
  p.open_model = std::move(parts.open_model);
  p.exit_code = exit_code_for;
  return serve_rpc(std::move(p), STDIN_FILENO);
}

// In the loop process, unprivileged: the threads start here, so they are as confined as the
// loop (capabilities and the seccomp filter are per thread).
int run_confined(const RunOptions& o, LoopParts& p, EventSink& sink) {
  Inbox inbox;
  for (const auto& f : o.follow_ups) inbox.follow_up(f);
  // stdin is the console's pipe: the lines the person typed that were not answers, each a
  // steering message (with --rpc: the checked commands).
  std::unique_ptr<SteeringInput> terminal;
  if (p.mode == RunMode::kLines) terminal = std::make_unique<SteeringInput>(STDIN_FILENO, inbox);
  const SignalStop interrupt(SIGINT, [] { g_cancel.request(); });
  if (!interrupt.watching())  // Ctrl-C then ends moat as by default
    std::fprintf(stderr, "moat: SIGINT cannot be watched (eventfd: %s)\n", std::strerror(errno));

  RunEvents events(sink, o.model);
  events.session(session_fields(o, p));
  const Welcome& welcome = p.moatd.welcome;
  // The audit log is moatd's, and written whatever the run asks: every decision is on disk
  // before its action runs (docs/security.md).
  if (o.ephemeral && !welcome.audit.empty())
    std::fprintf(stderr,
                 "moat: --ephemeral: no session file is written; moatd's audit log still "
                 "records every decision and call: %s\n",
                 welcome.audit.c_str());
  MoatdClient* c = p.moatd.client.get();
  c->set_on_decided([&events](const std::string& id, const json& d) { events.decided(id, d); });
  c->set_on_mcp_status([&events](const sandbox::McpServerStatus& s) {
    events.emit({{"type", "mcp_status"}, {"server", s.to_json()}});
  });
  c->start_reader();  // moatd's frames are read by a thread of their own from here on
  CallTool call_tool = [c, &events](const std::string& id, const std::string& tool,
                                    const json& args, std::stop_token cancel) {
    return c->call(
        id, tool, args, [&events, &id](std::string_view chunk) { events.output(id, chunk); },
        cancel);
  };
  std::optional<LoopOutcome> outcome;
  const bool served = serves_prompts(p.mode);  // prompts come one after another on stdin
  if (!served)
    outcome = run_loop(*p.moatd.provider, call_tool, *p.store, p.system_prompt, welcome.tools,
                       o.loop, events.loop_events(), g_cancel.token(), &inbox);
  const int rpc_code = served ? serve_rpc_confined(o, p, events, call_tool) : 0;
  p.moatd.client->bye();
  if (terminal) terminal->close();
  p.moatd.client.reset();  // after moatd closed the connection: session.end is written
  if (!outcome) return rpc_code;  // --rpc: each prompt's run had its result
  const int code = exit_code_for(outcome->stop);
  events.result(*outcome, code, record_paths(o, p));
  return code;
}

// The mode, and how a failure to start is reported, decided before anything runs.
Start decide_start(const RunOptions& o) {
  Start start;
  // --rpc: the client answers moatd's questions (ask events, answer commands).
  start.mode = decide_run_mode({.headless = o.headless,
                                .interactive = o.interactive,
                                .print = o.print,
                                .json = o.json_events,
                                .rpc = o.rpc,
                                .stdin_tty = ::isatty(STDIN_FILENO) == 1,
                                .stdout_tty = ::isatty(STDOUT_FILENO) == 1});
  start.json = o.json_events || start.mode == RunMode::kRpc;
  // A terminal run's loop writes events too: the console draws them (agent/terminal_view.h).
  start.events = loop_writes_json(start.mode) ? json_event_sink(stdout) : text_event_sink();
  return start;
}

// Each step takes what the steps before it opened and returns what it opens, or why the run
// ends there (said by Start::exit_with).
int run(RunOptions& o) {
  const Start start = decide_start(o);
  const RunMode mode = start.mode;
  Step<Inputs> in = read_inputs(o, mode);  // the workspace and the task
  if (const Stop* s = std::get_if<Stop>(&in)) return start.exit_with(*s);
  const Inputs& inputs = std::get<Inputs>(in);
  // Everything the loop needs is opened before privileges go: the provider (its script or
  // its key), moatd, and the session file.
  Step<CheckedProvider> checked = open_model(o, inputs.workspace);
  if (const Stop* s = std::get_if<Stop>(&checked)) return start.exit_with(*s);
  // Before moatd loads the policy; --rpc's stdin is commands, so nobody is asked there.
  settle_project_trust(inputs.workspace, !is_typed(mode), STDIN_FILENO);
  Step<Started> started = start_moatd_session(o, mode, inputs.workspace,
                                              std::move(std::get<CheckedProvider>(checked)));
  if (const Stop* s = std::get_if<Stop>(&started)) return start.exit_with(*s);
  LoopParts parts{mode, inputs.workspace, std::move(std::get<Started>(started)), nullptr, {}, {}};
  auto store = open_session_file(o, mode, inputs, parts.moatd);
  if (const Stop* s = std::get_if<Stop>(&store)) return start.exit_with(*s);
  parts.store = std::move(std::get<0>(store));
  // Project docs (AGENTS.md) are read while we can still read what the person can.
  parts.system_prompt = system_prompt_for(parts.moatd.welcome.tools, inputs.workspace);
  if (serves_prompts(mode)) parts.open_model = model_opener();
  if (Stopped s = split_off_the_loop(o, mode, inputs.task, *parts.moatd.client))
    return start.exit_with(*s);
  return run_confined(o, parts, *start.events);
}

// Who answers and what each stream carries (docs/events.md).
void add_mode_flags(CLI::App& cmd, RunOptions& o) {
  auto* headless =
      cmd.add_flag("--headless", o.headless, "Never ask a person: 'ask' decisions become deny");
  auto* print = cmd.add_flag("-p,--print", o.print,
                             "Text mode, headless: the final answer alone on stdout; progress, "
                             "calls and status lines on stderr (the default without a terminal)");
  auto* json_flag = cmd.add_flag(
      "--json", o.json_events,
      "Headless, one JSON event per line on stdout (docs/events.md); the rest on stderr");
  json_flag->excludes(print);
  auto* rpc = cmd.add_flag("--rpc", o.rpc,
                           "Commands as JSON lines on stdin (prompt, steer, follow_up, abort, "
                           "answer, get_state, set_model), events as with --json on stdout "
                           "(docs/events.md)");
  rpc->excludes(print)->excludes(json_flag)->excludes(headless);
  cmd.add_flag("--ephemeral", o.ephemeral,
               "Write no session file (moatd's audit log is still written: it records every "
               "decision before the action runs)");
  cmd.add_flag("--interactive", o.interactive,
               "Ask the person for 'ask' decisions; any other line typed while the agent works "
               "is a message the model gets after the current step")
      ->excludes(headless)
      ->excludes(print)
      ->excludes(rpc);
}

}  // namespace

void add_run_command(CLI::App& app, int& exit_code) {
  auto opts = std::make_shared<RunOptions>();
  auto* cmd = app.add_subcommand("run", "Run the agent on a task; tools run in moatd's sandbox");
  set_exit_codes(*cmd,
                 {kExitDone, kExitTaskFailed, kExitUsage, kExitSandbox, kExitProvider, kExitStore});
  cmd->add_option("task", opts->task_words, "The task, as words");
  cmd->add_option("--task-file", opts->task_file,
                  "Read the task from a file (- is stdin; without a task, a stdin that is not a "
                  "terminal is read)");
  // Not required() here: config.toml's default_model or the resumed session's own model may
  // name it (chosen_model), and CLI11 checks required options before unknown ones, so a
  // typo'd flag was reported as a missing --model.
  cmd->add_option("-m,--model", opts->model,
                  "replay:FILE (recorded turns, no API key) or PROVIDER/MODEL-ID (default: "
                  "with --resume/--fork/--continue the session's own, else config.toml's "
                  "default_model)");
  cmd->add_option("--workspace,-C", opts->workspace,
                  "The repository to work in (default: ., or with --resume the session's own)");
  cmd->add_flag("--allow-home-workspace", opts->allow_home_workspace,
                "Let a headless run work in the home directory or above it (-C ~, -C /): "
                "refused without it, as the sandbox could change everything under the home");
  cmd->add_option("--connect", opts->connect, "Use a running moatd at this socket path");
  add_mode_flags(*cmd, *opts);
  cmd->add_option("--follow-up", opts->follow_ups,
                  "A message for when the agent would stop: it goes on with it instead "
                  "(repeatable; delivered one at a time, in order)")
      ->allow_extra_args(false);  // one value per flag: the task words after it stay the task
  cmd->add_option("--max-turns", opts->loop.max_turns, "Gate: model turns")
      ->check(non_negative<decltype(opts->loop.max_turns)>())
      ->capture_default_str();
  cmd->add_option("--max-tokens", opts->loop.max_total_tokens, "Gate: total tokens (0 = none)")
      ->check(non_negative<decltype(opts->loop.max_total_tokens)>());
  cmd->add_option("--max-cost", opts->loop.max_cost, "Gate: cost in USD (0 = none)")
      ->check(non_negative<decltype(opts->loop.max_cost)>());
  cmd->add_option("--max-wall", opts->loop.max_wall_s, "Gate: wall time in seconds (0 = none)")
      ->check(non_negative<decltype(opts->loop.max_wall_s)>());
  cmd->add_option("--repeat-limit", opts->loop.repeat_limit,
                  "Stop when the same call fails the same way this many times")
      ->capture_default_str();
  cmd->add_option("--context-window", opts->loop.context_window,
                  "Compact when the context passes this size minus the reserve (default: the "
                  "model's window; 0 with replay)");
  cmd->add_option("--compaction-reserve", opts->loop.compaction_reserve, "Tokens kept free")
      ->capture_default_str();
  cmd->add_option("--keep-recent", opts->loop.compaction_keep_recent,
                  "Tokens kept verbatim after a compaction")
      ->capture_default_str();
  cmd->add_option("--uid", opts->uid, "Unprivileged uid of the loop when started as root")
      ->capture_default_str();
  cmd->add_option("--gid", opts->gid, "Unprivileged gid of the loop when started as root")
      ->capture_default_str();
  cmd->add_option("--sessions-dir", opts->sessions_dir,
                  "Where session files go (default $XDG_STATE_HOME/moat/sessions)");
  auto* resume = cmd->add_option("--resume", opts->resume,
                                 "Continue session ID (or ID@ENTRY: branch from that entry) in "
                                 "its own workspace");
  auto* fork =
      cmd->add_option("--fork", opts->fork, "Start a new session from a copy of ID (or ID@ENTRY)")
          ->excludes(resume);
  auto* cont = cmd->add_flag("--continue", opts->continue_latest,
                             "Continue the newest session of this workspace")
                   ->excludes(resume)
                   ->excludes(fork);
  cmd->get_option("--ephemeral")->excludes(resume)->excludes(fork)->excludes(cont);
  add_moatd_pass_through(*cmd, opts->moatd);
  cmd->callback([opts, &exit_code] { exit_code = run(*opts); });
}

}  // namespace moat::agent
