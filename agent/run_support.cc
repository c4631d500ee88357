// agent/run_support.cc: shared plumbing of `moat run` and `moat sandbox exec`.
#include "agent/run_support.h"

#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <optional>

#include "agent/providers/config.h"
#include "agent/providers/factory.h"
#include "agent/providers/prompt.h"
#include "agent/replay_provider.h"
#include "base/log.h"

namespace moat::agent {
namespace {

using nlohmann::json;

std::string one_line(std::string s, std::size_t max) {
  for (char& c : s)
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  if (s.size() > max) s = s.substr(0, max) + "...";
  return s;
}

const char* stop_name(LoopStop s) {
  switch (s) {
    case LoopStop::kDone:
      return "done";
    case LoopStop::kGate:
      return "stopped by a gate";
    case LoopStop::kRepetition:
      return "stopped: repetition";
    case LoopStop::kProviderError:
      return "provider error";
    case LoopStop::kCancelled:
      return "cancelled";
    case LoopStop::kTerminated:
      return "done (tools asked to stop)";
  }
  return "?";
}

}  // namespace

void add_moatd_pass_through(CLI::App& cmd, MoatdPassThrough& o) {
  cmd.add_option("--audit-dir", o.audit_dir,
                 "Audit log directory of the private moatd (default $XDG_STATE_HOME/moat/audit)");
  cmd.add_option("--system-policy-dir", o.system_policy_dir,
                 "Organisation policy directory (default /etc/moat/policy.d)");
  cmd.add_option("--user-policy-dir", o.user_policy_dir,
                 "User policy directory (default $XDG_CONFIG_HOME/moat/policy.d)");
  cmd.add_option("--policy", o.policy_files,
                 "An extra policy file, layered last (it may only narrow)")
      ->check(CLI::ExistingFile);
  cmd.add_option("--allow-without", o.allow_without,
                 "Let the private moatd run sessions without this sandbox layer");
}

Result<std::string> canonical_workspace(const std::string& path) {
  const std::string p = path.empty() ? "." : path;
  char real[PATH_MAX];
  struct stat st {};
  if (::realpath(p.c_str(), real) == nullptr)
    return fail(Error::from_errno("realpath", errno, "workspace " + p));
  if (::stat(real, &st) != 0 || !S_ISDIR(st.st_mode))
    return fail("workspace " + p + " is not a directory");
  return std::string(real);
}

Result<std::string> canonical_path(const std::string& path) {
  char real[PATH_MAX];
  if (::realpath(path.c_str(), real) == nullptr) return fail(Error::from_errno("realpath", errno, path));
  return std::string(real);
}

Result<std::unique_ptr<Provider>> open_provider(const std::string& spec) {
  if (spec.rfind("replay:", 0) == 0) return make_replay_provider(spec.substr(7));
  // A real provider: its key is read from the environment here, in the agent process,
  // and never leaves it (moatd and the sandbox get a scrubbed environment).
  MOAT_ASSIGN_OR_RETURN(providers::Config config, providers::load_config());
  return providers::make_provider(spec, config);
}

std::int64_t model_context_window(const std::string& spec) {
  if (spec.rfind("replay:", 0) == 0) return 0;
  auto cfg = providers::load_config();
  if (!cfg) return 0;
  auto m = providers::resolve_model(spec, *cfg);
  return m ? m->model.context_window : 0;
}

Result<std::unique_ptr<MoatdClient>> start_moatd(const std::string& socket_path,
                                                 const MoatdPassThrough& o) {
  if (!socket_path.empty()) return MoatdClient::connect(socket_path);
  std::vector<std::string> args;
  if (!o.audit_dir.empty()) args.insert(args.end(), {"--audit-dir", o.audit_dir});
  if (!o.system_policy_dir.empty())
    args.insert(args.end(), {"--system-policy-dir", o.system_policy_dir});
  if (!o.user_policy_dir.empty()) args.insert(args.end(), {"--user-policy-dir", o.user_policy_dir});
  for (const auto& l : o.allow_without) args.insert(args.end(), {"--allow-without", l});
  for (const auto& f : o.policy_files) {
    auto abs = canonical_path(f);
    args.insert(args.end(), {"--policy", abs ? *abs : f});
  }
  return MoatdClient::spawn_private(args);
}

std::string system_prompt_for(const std::vector<tools::ToolSpec>& tools,
                              const std::string& workspace) {
  providers::PromptInputs in;
  in.tools = tools;
  in.workspace = workspace;
  in.project_docs = providers::find_project_docs(workspace);
  return providers::assemble_system_prompt(in);
}

LoopEvents console_events(const std::string& model_spec) {
  LoopEvents ev;
  // Cost and the cache-miss audit of every answer, with the model's prices; written into
  // the answer (so into the session) and shown when a miss is worth mentioning.
  providers::Pricing pricing;
  if (model_spec.rfind("replay:", 0) != 0) {
    if (auto cfg = providers::load_config(); cfg) {
      if (auto m = providers::resolve_model(model_spec, *cfg); m) pricing = m->model.pricing;
    }
  }
  struct Accounting {
    providers::Pricing pricing;
    std::optional<providers::CacheState> previous;
    providers::SessionTotals totals;
  };
  auto acc = std::make_shared<Accounting>();
  acc->pricing = pricing;
  ev.on_answer = [acc, model_spec](Message& answer) {
    const auto usage = providers::Usage::from_message(answer);
    const auto cost = providers::cost_of(usage, acc->pricing);
    answer["cost"] = cost.to_json();
    acc->totals.add(usage, cost);
    const auto now = std::chrono::system_clock::now();
    if (auto miss = providers::audit_cache(acc->previous, model_spec, usage, acc->pricing, now)) {
      answer["cacheMiss"] = miss->to_json();
      std::printf("moat: cache miss: %lld tokens not read from the cache (%s), $%.4f\n",
                  static_cast<long long>(miss->missed_tokens), miss->reason.c_str(), miss->cost);
    }
    acc->previous = providers::CacheState{model_spec, usage.prompt(), now};
  };
  ev.on_text = [](std::string_view t) {
    std::fwrite(t.data(), 1, t.size(), stdout);
    std::fputc('\n', stdout);
    std::fflush(stdout);
  };
  ev.on_call = [](const std::string& tool, const json& args) {
    std::string shown = tool == "bash" && args.contains("command") && args["command"].is_string()
                            ? args["command"].get<std::string>()
                            : args.dump();
    std::printf("  > %s: %s\n", tool.c_str(), one_line(shown, 160).c_str());
    std::fflush(stdout);
  };
  ev.on_result = [](const std::string&, const tools::ToolResult& r) {
    std::string text;
    for (const auto& b : r.content)
      if (b.value("type", "") == "text") text += b.value("text", "");
    // The tail: for a test run, the last lines say whether it passed.
    std::string tail = text.size() > 4000 ? "..." + text.substr(text.size() - 4000) : text;
    std::printf("    %s\n", r.is_error ? "[error]" : "[ok]");
    std::size_t start = 0;
    while (start < tail.size()) {
      std::size_t nl = tail.find('\n', start);
      std::string line = tail.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
      std::printf("    | %s\n", line.c_str());
      if (nl == std::string::npos) break;
      start = nl + 1;
    }
    std::fflush(stdout);
  };
  ev.on_note = [](const std::string& n) { std::printf("moat: %s\n", n.c_str()); };
  return ev;
}

std::function<MoatdClient::Answer(const std::string&)> terminal_ask_handler() {
  auto mu = std::make_shared<std::mutex>();
  return [mu](const std::string& question) {
    std::lock_guard<std::mutex> lock(*mu);
    std::fprintf(stderr, "\nmoat: %s\n      allow once [y], allow for this session [s], deny [n]? ",
                 one_line(question, 400).c_str());
    std::fflush(stderr);
    char line[64] = {0};
    MoatdClient::Answer a;
    if (std::fgets(line, sizeof line, stdin) != nullptr) {
      a.allow = line[0] == 'y' || line[0] == 'Y' || line[0] == 's' || line[0] == 'S';
      a.for_session = line[0] == 's' || line[0] == 'S';
    }
    std::fprintf(stderr, "moat: %s\n", a.allow ? (a.for_session ? "allowed for this session" : "allowed once") : "denied");
    return a;
  };
}

void print_summary(const LoopOutcome& outcome, const sessions::SessionStore& store,
                   const std::string& audit_path) {
  std::printf("\nmoat: %s after %d turn%s", stop_name(outcome.stop), outcome.turns,
              outcome.turns == 1 ? "" : "s");
  if (!outcome.detail.empty()) std::printf(" (%s)", outcome.detail.c_str());
  std::printf("\nmoat: session file: %s\n", store.path().c_str());
  if (!audit_path.empty()) std::printf("moat: audit log:    %s\n", audit_path.c_str());
  std::fflush(stdout);
}

}  // namespace moat::agent
