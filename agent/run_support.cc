// agent/run_support.cc: shared plumbing of `moat run` and `moat sandbox exec`.
#include "agent/run_support.h"

#include <poll.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <optional>

#include "agent/cli.h"
#include "agent/providers/config.h"
#include "agent/providers/factory.h"
#include "agent/providers/prompt.h"
#include "agent/replay_provider.h"
#include "base/lf_lines.h"
#include "base/log.h"
#include "base/moat_dirs.h"
#include "base/workspace_path.h"
#include "tools/registry.h"

namespace moat::agent {
std::string home_workspace_risk(const std::string& workspace) {
  const std::string given = dirs::home();
  const auto resolved = real_path(given);
  const std::string home = resolved ? *resolved : given;
  const bool above = workspace != home && (workspace == "/" || home.starts_with(workspace + "/"));
  if (workspace != home && !above) return {};
  return "workspace " + moat::quoted(workspace) + (above ? " contains" : " is") +
         " the home directory " + moat::quoted(home) +
         ": commands in the sandbox can change everything under it but the startup files "
         "moat masks (shells', git's, ssh's, the program directories): your other projects "
         "and their .git/config, your documents, the rest of ~/.config";
}

std::string one_line(std::string s, std::size_t max) {
  for (char& c : s)
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  if (s.size() > max) s = s.substr(0, max) + "...";
  return s;
}

// The configuration of the model behind `spec`; none for replay and unknown models.
std::optional<providers::ModelConfig> configured_model(const std::string& spec) {
  if (spec.rfind("replay:", 0) == 0) return std::nullopt;
  auto cfg = providers::load_config();
  if (!cfg) return std::nullopt;
  auto m = providers::resolve_model(spec, *cfg);
  if (!m) return std::nullopt;
  return m->model;
}

bool is_answer(const std::string& line) {
  std::string s;
  for (char c : line)
    if (c != ' ' && c != '\t' && c != '\r')
      s += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s == "y" || s == "yes" || s == "s" || s == "n" || s == "no";
}

PersonAnswer parse_answer(const std::optional<std::string>& line) {
  const std::size_t first = line ? line->find_first_not_of(" \t") : std::string::npos;
  const char c = first == std::string::npos ? '\0' : (*line)[first];
  PersonAnswer a;
  a.allow = c == 'y' || c == 'Y' || c == 's' || c == 'S';
  a.for_session = c == 's' || c == 'S';
  return a;
}

void print_question(const std::string& question) {
  std::string shown = one_line(question, 400);
  for (char& c : shown)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  std::fprintf(stderr, "\nmoat: %s\n      allow once [y], allow for this session [s], deny [n]? ",
               shown.c_str());
  std::fflush(stderr);
}

void print_answer(const PersonAnswer& a) {
  std::fprintf(stderr, "moat: %s\n",
               a.allow ? (a.for_session ? "allowed for this session" : "allowed once") : "denied");
  std::fflush(stderr);
}

void add_moatd_pass_through(CLI::App& cmd, MoatdPassThrough& o) {
  cmd.add_option("--audit-dir", o.audit_dir,
                 "Audit log directory of the private moatd (default $XDG_STATE_HOME/moat/audit)");
  add_policy_dir_options(cmd, o.system_policy_dir, o.user_policy_dir,
                         "Organisation policy directory (default /etc/moat/policy.d)",
                         "User policy directory (default $XDG_CONFIG_HOME/moat/policy.d)");
  // Repeatable options take one value per flag: CLI11 lets a vector option swallow the
  // words after it, and `moat run --policy FILE "task"` would take the task for a file.
  cmd.add_option("--policy", o.policy_files,
                 "An extra policy file, layered last (it may only narrow; repeatable)")
      ->check(CLI::ExistingFile)
      ->allow_extra_args(false);
  cmd.add_flag("--no-default-policy", o.no_default_policy,
               "Leave out the built-in default policy: only the system, user, project and "
               "--policy layers decide (a private moatd only)");
  cmd.add_option("--allow-without", o.allow_without,
                 "Let the private moatd run sessions without this sandbox layer (repeatable)")
      ->allow_extra_args(false);
}

Result<CheckedProvider> check_provider(const std::string& spec) {
  CheckedProvider c;
  if (spec.rfind("replay:", 0) == 0) {
    MOAT_ASSIGN_OR_RETURN(c.ready, make_replay_provider(spec.substr(7)));
    return c;
  }
  // A real provider: its key is read from the environment here, in the agent process,
  // and never leaves it (moatd and the sandbox get a scrubbed environment).
  MOAT_ASSIGN_OR_RETURN(providers::Config config, providers::load_config());
  MOAT_ASSIGN_OR_RETURN(c.http, providers::provider_settings(spec, config));
  return c;
}

Result<std::unique_ptr<Provider>> finish_provider(CheckedProvider checked) {
  if (checked.ready) return std::move(checked.ready);
  return providers::make_http_provider_loaded(std::move(*checked.http));
}

std::int64_t model_context_window(const std::string& spec) {
  auto m = configured_model(spec);
  return m ? m->context_window : 0;
}

std::int64_t model_max_output(const std::string& spec) {
  auto m = configured_model(spec);
  return m ? m->max_output : 0;
}

namespace {

// The first option given that only a private moatd takes; null when none is.
const char* private_policy_option(const MoatdPassThrough& o) {
  if (o.permissive) return "--permissive";
  if (o.no_default_policy) return "--no-default-policy";
  if (!o.system_policy_dir.empty()) return "--system-policy-dir";
  if (!o.user_policy_dir.empty()) return "--user-policy-dir";
  if (!o.policy_files.empty()) return "--policy";
  return nullptr;
}

}  // namespace

Result<std::unique_ptr<MoatdClient>> start_moatd(const std::string& socket_path,
                                                 const MoatdPassThrough& o, bool console) {
  if (!socket_path.empty()) {
    // A shared moatd's policy is its operator's: a client's options (and its MOAT_POLICY_DIR
    // and MOAT_USER_POLICY_DIR, which only a private moatd inherits) cannot change it.
    if (const char* option = private_policy_option(o))
      return fail(std::string(option) +
                  " sets the policy of a private moatd; a shared moatd's (--connect) is its "
                  "operator's");
    return MoatdClient::connect(socket_path);
  }
  std::vector<std::string> args;
  if (!o.audit_dir.empty()) args.insert(args.end(), {"--audit-dir", o.audit_dir});
  if (!o.sessions_dir.empty()) {
    auto abs = real_path(o.sessions_dir);
    args.insert(args.end(), {"--sessions-dir", abs ? *abs : o.sessions_dir});
  }
  if (!o.system_policy_dir.empty())
    args.insert(args.end(), {"--system-policy-dir", o.system_policy_dir});
  if (!o.user_policy_dir.empty()) args.insert(args.end(), {"--user-policy-dir", o.user_policy_dir});
  for (const auto& l : o.allow_without) args.insert(args.end(), {"--allow-without", l});
  if (o.no_default_policy) args.push_back("--no-default-policy");
  if (o.permissive) args.push_back("--permissive");
  if (o.typed_exec) args.push_back("--typed-exec");
  for (const auto& f : o.policy_files) {
    auto abs = real_path(f);
    args.insert(args.end(), {"--policy", abs ? *abs : f});
  }
  return MoatdClient::spawn_private(args, console);
}

std::string system_prompt_for(const std::vector<tools::ToolSpec>& tools,
                              const std::string& workspace) {
  providers::PromptInputs in;
  in.tools = tools;
  in.workspace = workspace;
  in.project_docs = providers::find_project_docs(workspace);
  return providers::assemble_system_prompt(in);
}

TerminalInput::TerminalInput(int fd, Inbox& inbox) : fd_(fd), inbox_(inbox) {
  reader_ = std::thread([this] { read_lines(); });
}

void TerminalInput::close() {
  stop_ = true;
  if (reader_.joinable()) reader_.join();
}

namespace {
constexpr std::size_t kMaxLine = 64 * 1024;
}  // namespace

void TerminalInput::read_lines() {
  std::string pending;
  char buf[4096];
  const bool terminal = ::isatty(fd_) == 1;
  while (!stop_.load()) {
    // A run in a background job must not read its terminal: the read would stop the whole
    // process with SIGTTIN. It reads once it is in the foreground again.
    if (terminal && ::tcgetpgrp(fd_) != ::getpgrp()) {
      ::poll(nullptr, 0, 100);
      continue;
    }
    // A timeout, so the destructor's stop is seen even when nobody types.
    pollfd pfd{fd_, POLLIN, 0};
    const int ready = ::poll(&pfd, 1, 100);
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) continue;
    const ssize_t n = ready > 0 ? ::read(fd_, buf, sizeof buf) : -1;
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    take_lf_lines(pending, std::string_view(buf, static_cast<std::size_t>(n)),
                  [this](std::string line) { take_line(std::move(line)); });
    // A "line" without end (a pasted file, a stream of bytes) is taken in bounded pieces.
    if (pending.size() >= kMaxLine) {
      take_line(pending.substr(0, kMaxLine));
      pending.erase(0, kMaxLine);
    }
  }
  if (!pending.empty()) take_line(pending);
  std::lock_guard<std::mutex> lock(mu_);
  eof_ = true;
  cv_.notify_all();
}

// Routing a line and a question's look at the typed-ahead lines happen under one lock, so a
// line typed as the question starts is either seen by that look or handed to the question.
void TerminalInput::take_line(std::string line) {
  if (!line.empty() && line.back() == '\r') line.pop_back();
  std::lock_guard<std::mutex> lock(mu_);
  if (waiting_ && !answer_) {
    answer_ = std::move(line);
    cv_.notify_all();
    return;
  }
  if (line.find_first_not_of(" \t") == std::string::npos) return;
  inbox_.steer(line);
  std::fprintf(stderr, "moat: message queued: the model gets it after the current step\n");
  std::fflush(stderr);
}

PersonAnswer TerminalInput::ask(const std::string& question) {
  std::lock_guard<std::mutex> one_at_a_time(ask_mu_);
  print_question(question);
  std::unique_lock<std::mutex> lock(mu_);
  std::optional<std::string> line = inbox_.take_steering_if(is_answer);
  if (!line) {
    waiting_ = true;
    cv_.wait(lock, [this] { return answer_.has_value() || eof_; });
    line = std::exchange(answer_, std::nullopt);
    waiting_ = false;
  }
  lock.unlock();
  const PersonAnswer a = parse_answer(line);
  print_answer(a);
  return a;
}

}  // namespace moat::agent
