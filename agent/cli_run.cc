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

// Set when a step ends the run: the exit code, its reason already printed.
using Exit = std::optional<int>;

// What the steps of `moat run` open, in order, for the loop.
struct Opened {
  std::string workspace;
  std::string task;  // empty when a resumed session goes on without a new one
  RunMode mode = RunMode::kPrint;  // decided once, before anything runs (run_mode.h)
  bool json = false;               // --json or --rpc: a failure to start is an event too
  CheckedProvider checked;  // the provider, until its transport is loaded (finish_provider)
  std::unique_ptr<Provider> provider;
  std::unique_ptr<MoatdClient> client;
  Welcome welcome;
  std::unique_ptr<sessions::SessionStore> store;
  std::string system_prompt;
  std::unique_ptr<EventSink> events;  // text or JSON, from the start: a failure is an event too
  std::function<Result<ModelChoice>(const std::string&)> open_model;  // --rpc's set_model
};

// A step's failure before the loop: said on stderr and, with --json, as the stream's events
// (its first one carries the schema: no session header came before it).
Exit exit_with(Opened& r, int code, const std::string& message) {
  std::fprintf(stderr, "moat: %s\n", message.c_str());
  if (r.json) {
    r.events->emit(
        {{"type", "error"}, {"schema", kEventSchema}, {"during", "start"}, {"message", message}});
    r.events->emit(
        {{"type", "result"}, {"stop", "error"}, {"detail", message}, {"exit_code", code}});
  }
  return code;
}

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
Exit check_home_workspace(const RunOptions& o, Opened& r) {
  const std::string risk = home_workspace_risk(r.workspace);
  if (risk.empty()) return std::nullopt;
  if (is_headless(r.mode) && !o.allow_home_workspace)
    return exit_with(r, kExitUsage,
                     "-C: " + risk +
                         "; a headless run refuses it: pass --allow-home-workspace to run "
                         "there anyway, or -C a project directory");
  std::fprintf(stderr, "moat: warning: %s\n", risk.c_str());
  return std::nullopt;
}

// Usage errors come first, before anything is started.
Exit read_inputs(const RunOptions& o, Opened& r) {
  auto workspace = o.resume.empty() ? canonical_workspace(o.workspace) : resumed_workspace(o);
  const bool named = o.resume.empty() && !o.workspace.empty();  // the option to fix is -C
  if (!workspace)
    return exit_with(r, kExitUsage, (named ? "-C: " : "") + workspace.error().message());
  r.workspace = std::move(*workspace);
  if (Exit e = check_home_workspace(o, r)) return *e;
  const bool resuming = !o.resume.empty() || !o.fork.empty() || o.continue_latest;
  if (r.mode == RunMode::kRpc && (!o.task_words.empty() || !o.task_file.empty()))
    return exit_with(r, kExitUsage,
                     "--rpc takes its tasks as prompt commands on stdin, not as words or "
                     "--task-file");
  if (r.mode == RunMode::kRpc) return std::nullopt;
  // At a terminal the first prompt may wait for the person, as every later one does.
  if (r.mode == RunMode::kTerminal && o.task_words.empty() && o.task_file.empty()) return std::nullopt;
  if (!resuming || !o.task_words.empty() || !o.task_file.empty()) {
    auto task = read_task(o);
    if (!task) return exit_with(r, kExitUsage, task.error().message());
    r.task = std::move(*task);
  }
  return std::nullopt;
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

Exit open_model(RunOptions& o, Opened& r) {
  // config.toml is checked whichever model runs (replay too): an error in it is said now,
  // with its file:line:col, before anything starts, not at the first run that needs it.
  auto config = providers::load_config();
  if (!config) return exit_with(r, kExitUsage, config.error().message());
  auto model = chosen_model(o, r.workspace, *config);
  if (!model) return exit_with(r, kExitUsage, model.error().message());
  o.model = std::move(*model);
  auto checked = check_provider(o.model);
  if (!checked) return exit_with(r, kExitUsage, checked.error().message());
  r.checked = std::move(*checked);
  if (o.loop.context_window == 0) o.loop.context_window = model_context_window(o.model);
  // Each request asks for the model's own output limit (a fixed 8192 went out whatever
  // config.toml said).
  if (const std::int64_t out = model_max_output(o.model); out > 0)
    o.loop.max_output_tokens = static_cast<int>(std::min<std::int64_t>(out, 1 << 30));
  return std::nullopt;
}

// An interactive session gets a console channel to moatd, which only the console process
// will hold: a private moatd's second socketpair, or a shared moatd's one-time token.
// moatd builds the session (the policy, the audit log, the namespaces and cgroups: most of
// the start-up) while this process loads the provider's transport.
Exit start_moatd_session(const RunOptions& o, Opened& r) {
  MoatdPassThrough pass = o.moatd;
  pass.sessions_dir = o.sessions_dir;  // so moatd keeps them out of the sandbox's reach
  auto client = start_moatd(o.connect, pass, !is_headless(r.mode));
  if (!client) return exit_with(r, kExitSandbox, client.error().message());
  r.client = std::move(*client);
  WelcomeError why;
  auto sent = r.client->send_hello(r.workspace, is_headless(r.mode), &why);
  auto provider = finish_provider(std::move(r.checked));
  if (!provider) return exit_with(r, kExitUsage, provider.error().message());
  r.provider = std::move(*provider);
  auto welcome = sent ? r.client->await_welcome(&why) : Result<Welcome>(fail(sent.error()));
  if (!welcome)
    return exit_with(r, why.code == "sandbox" || why.code == "io" ? kExitSandbox : kExitUsage,
                     welcome.error().message());
  r.welcome = std::move(*welcome);
  // Attached now, before the loop exists: the token is spent before any model is asked.
  if (!r.welcome.console_token.empty()) {
    if (auto a = r.client->attach_console(r.welcome.session, r.welcome.console_token); !a)
      return exit_with(r, kExitSandbox, a.error().message());
  }
  return std::nullopt;
}

json tool_names(const Welcome& w) {
  json names = json::array();
  for (const auto& t : w.tools) names.push_back(t.name);
  return names;
}

// The session file starts with the model, the tools moatd offers and the task.
Exit open_session_file(const RunOptions& o, Opened& r) {
  auto store = open_session(o, sessions_dir_of(o), r.workspace);
  if (!store) return exit_with(r, kExitUsage, store.error().message());
  r.store = std::move(*store);
  (void)r.store->append(
      {{"type", "model_change"}, {"provider", r.provider->name()}, {"model", r.provider->model()}});
  (void)r.store->append({{"type", "tools_change"},
                         {"tools", tool_names(r.welcome)},
                         {"moatd_session", r.welcome.session}});
  if (!r.task.empty() && r.mode != RunMode::kTerminal)  // a terminal session's first prompt runs as every other
    (void)r.store->append(
        {{"type", "message"},
         {"message", {{"role", "user"}, {"content", {{{"type", "text"}, {"text", r.task}}}}}}});
  if (auto s = r.store->sync(); !s)
    return exit_with(r, kExitUsage, "session file: " + s.error().message());
  return std::nullopt;
}

// This process stays the console (the terminal, the person's answers); the loop goes on in a
// child that holds neither, then drops its privileges.
Exit split_off_the_loop(const RunOptions& o, Opened& r) {
  ConsoleOptions console;
  console.channel = r.client->take_console();
  console.mode = r.mode;
  if (r.mode == RunMode::kTerminal) console.first_prompt = r.task;
  console.moatd_pid = r.client->moatd_pid();
  console.loop_only_fds = {r.client->fd()};
  if (auto s = split_console_and_loop(std::move(console)); !s)
    return exit_with(r, kExitSandbox, "could not start the loop process: " + s.error().message());
  if (auto s = drop_to_unprivileged_loop({o.uid, o.gid}); !s)
    return exit_with(r, kExitSandbox,
                     "could not make the loop process unprivileged: " + s.error().message());
  if (auto s = die_with_console(); !s) return exit_with(r, kExitSandbox, s.error().message());
  return std::nullopt;
}

// Where the run leaves its records: the session file (none with --ephemeral), the audit log.
json record_paths(const RunOptions& o, const Opened& r) {
  return {{"session_file", o.ephemeral ? json(nullptr) : json(r.store->path())},
          {"audit_log", r.welcome.audit.empty() ? json(nullptr) : json(r.welcome.audit)}};
}

// The session header: what runs, where, under which layers (docs/events.md).
json session_fields(const RunOptions& o, const Opened& r) {
  json fields = record_paths(o, r);
  fields.update(json{{"id", r.store->id()},
                     {"moatd_session", r.welcome.session},
                     {"workspace", r.workspace},
                     {"model", o.model},
                     {"provider", r.provider->name()},
                     {"policy_layers", r.welcome.policy.value("layers", json::array())},
                     {"policy_hash", r.welcome.policy.value("hash", "")},
                     {"sandbox", r.welcome.sandbox},
                     {"tools", tool_names(r.welcome)},
                     {"interactive", !is_headless(r.mode)},
                     {"ephemeral", o.ephemeral}});
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
int serve_rpc_confined(const RunOptions& o, Opened& r, RunEvents& events, CallTool call_tool) {
  RpcSessionParts p;
  p.provider = std::move(r.provider);
  p.model = o.model;
  p.store = r.store.get();
  p.system_prompt = r.system_prompt;
  p.tools = r.welcome.tools;
  p.config = o.loop;
  p.call_tool = std::move(call_tool);
  p.events = &events;
  p.cancel = &g_cancel;
  p.records = record_paths(o, r);
  p.open_model = std::move(r.open_model);
  p.exit_code = exit_code_for;
  return serve_rpc(std::move(p), STDIN_FILENO);
}

// In the loop process, unprivileged: the threads start here, so they are as confined as the
// loop (capabilities and the seccomp filter are per thread).
int run_confined(const RunOptions& o, Opened& r) {
  Inbox inbox;
  for (const auto& f : o.follow_ups) inbox.follow_up(f);
  // stdin is the console's pipe: the lines the person typed that were not answers, each a
  // steering message (with --rpc: the checked commands).
  std::unique_ptr<SteeringInput> terminal;
  if (r.mode == RunMode::kLines) terminal = std::make_unique<SteeringInput>(STDIN_FILENO, inbox);
  const SignalStop interrupt(SIGINT, [] { g_cancel.request(); });
  if (!interrupt.watching())  // Ctrl-C then ends moat as by default
    std::fprintf(stderr, "moat: SIGINT cannot be watched (eventfd: %s)\n", std::strerror(errno));

  RunEvents events(*r.events, o.model);
  events.session(session_fields(o, r));
  // The audit log is moatd's, and written whatever the run asks: every decision is on disk
  // before its action runs (docs/security.md).
  if (o.ephemeral && !r.welcome.audit.empty())
    std::fprintf(stderr,
                 "moat: --ephemeral: no session file is written; moatd's audit log still "
                 "records every decision and call: %s\n",
                 r.welcome.audit.c_str());
  MoatdClient* c = r.client.get();
  c->set_on_decided([&events](const std::string& id, const json& d) { events.decided(id, d); });
  c->start_reader();  // moatd's frames are read by a thread of their own from here on
  CallTool call_tool = [c, &events](const std::string& id, const std::string& tool,
                                    const json& args, std::stop_token cancel) {
    return c->call(
        id, tool, args, [&events, &id](std::string_view chunk) { events.output(id, chunk); },
        cancel);
  };
  std::optional<LoopOutcome> outcome;
  const bool served = serves_prompts(r.mode);  // prompts come one after another on stdin
  if (!served)
    outcome = run_loop(*r.provider, call_tool, *r.store, r.system_prompt, r.welcome.tools, o.loop,
                       events.loop_events(), g_cancel.token(), &inbox);
  const int rpc_code = served ? serve_rpc_confined(o, r, events, call_tool) : 0;
  r.client->bye();
  if (terminal) terminal->close();
  r.client.reset();  // after moatd closed the connection: session.end is written
  if (!outcome) return rpc_code;  // --rpc: each prompt's run had its result
  const int code = exit_code_for(outcome->stop);
  events.result(*outcome, code, record_paths(o, r));
  return code;
}

int run(RunOptions& o) {
  Opened r;
  // --rpc: the client answers moatd's questions (ask events, answer commands).
  r.mode = decide_run_mode({.headless = o.headless,
                            .interactive = o.interactive,
                            .print = o.print,
                            .json = o.json_events,
                            .rpc = o.rpc,
                            .stdin_tty = ::isatty(STDIN_FILENO) == 1,
                            .stdout_tty = ::isatty(STDOUT_FILENO) == 1});
  r.json = o.json_events || r.mode == RunMode::kRpc;
  // Decided before anything runs: a failure at any step is reported the same way.
  // A terminal run's loop writes events too: the console draws them (agent/terminal_view.h).
  r.events = loop_writes_json(r.mode) ? json_event_sink(stdout) : text_event_sink();
  if (Exit e = read_inputs(o, r)) return *e;  // the workspace and the task
  // Everything the loop needs is opened before privileges go: the provider (its script or
  // its key), moatd, and the session file.
  if (Exit e = open_model(o, r)) return *e;
  // Before moatd loads the policy; --rpc's stdin is commands, so nobody is asked there.
  settle_project_trust(r.workspace, !is_typed(r.mode), STDIN_FILENO);
  if (Exit e = start_moatd_session(o, r)) return *e;
  if (Exit e = open_session_file(o, r)) return *e;
  // Project docs (AGENTS.md) are read while we can still read what the person can.
  r.system_prompt = system_prompt_for(r.welcome.tools, r.workspace);
  if (serves_prompts(r.mode)) r.open_model = model_opener();
  if (Exit e = split_off_the_loop(o, r)) return *e;
  return run_confined(o, r);
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
