// agent/run_support.h: what `moat run` and `moat sandbox exec` share: resolving the
// workspace, opening the provider, starting moatd, printing progress and the summary.
#pragma once

#include <CLI/CLI.hpp>

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "agent/client.h"
#include "agent/loop.h"
#include "agent/provider.h"
#include "agent/providers/config.h"
#include "agent/providers/http_provider.h"
#include "base/result.h"
#include "sessions/store.h"

// Like MOAT_ASSIGN_OR_RETURN, for CLI functions that return an exit code: prints the error.
#define MOAT_ASSIGN_OR_RETURN_CODE(lhs, expr, code)                             \
  auto MOAT_CONCAT_(moat_aorc_, __LINE__) = (expr);                             \
  if (!MOAT_CONCAT_(moat_aorc_, __LINE__)) {                                    \
    std::fprintf(stderr, "moat: %s\n",                                          \
                 MOAT_CONCAT_(moat_aorc_, __LINE__).error().message().c_str()); \
    return code;                                                                \
  }                                                                             \
  lhs = std::move(MOAT_CONCAT_(moat_aorc_, __LINE__)).value()

namespace moat::agent {

// Options handed through to a private moatd.
struct MoatdPassThrough {
  std::string audit_dir;
  std::string sessions_dir;  // moat run's, for moatd to keep read-only (not a flag of its own)
  std::string system_policy_dir;
  std::string user_policy_dir;
  std::vector<std::string> allow_without;
  std::vector<std::string> policy_files;
  bool no_default_policy = false;  // leave out the built-in default policy
  bool permissive = false;         // moat sandbox exec --permissive (policy/permissive.h)
  // moat sandbox exec's own moatd: its exec frame is what the person typed (moatd
  // --typed-exec); never set by moat run, whose connection the agent loop holds.
  bool typed_exec = false;
};
void add_moatd_pass_through(CLI::App& cmd, MoatdPassThrough& o);

// Opens "replay:FILE" or "provider/model-id" in two steps, so that `moat run` can start moatd
// between them: check_provider
// says every usage error (the model, config.toml, the key; a replay file is opened), and
// finish_provider loads the HTTP transport (~10 ms of shared libraries) while moatd builds
// the session.
struct CheckedProvider {
  std::unique_ptr<Provider> ready;                  // replay: already open
  std::optional<providers::ProviderSettings> http;  // an HTTP provider, its transport not loaded
};
Result<CheckedProvider> check_provider(const std::string& spec);
Result<std::unique_ptr<Provider>> finish_provider(CheckedProvider checked);

// The model's context window from the configuration (0 for replay or unknown models).
std::int64_t model_context_window(const std::string& spec);
// The model's output limit (config.toml's `max_output`, or the catalogue's); 0 for replay.
std::int64_t model_max_output(const std::string& spec);

// Connects to `socket_path` when given, else starts a private moatd (with `console`, one
// whose session has a console channel: MoatdClient::spawn_private). With `socket_path`, an
// option that sets a private moatd's policy (--permissive, --no-default-policy, the policy
// directories, --policy) is refused: a shared moatd's policy is its operator's.
Result<std::unique_ptr<MoatdClient>> start_moatd(const std::string& socket_path,
                                                 const MoatdPassThrough& o, bool console = false);

std::string system_prompt_for(const std::vector<tools::ToolSpec>& tools,
                              const std::string& workspace);

// The configuration of the model behind `spec`; none for replay and unknown models.
std::optional<providers::ModelConfig> configured_model(const std::string& spec);

// Issue 27 item 13: a workspace that is the person's home directory or above it (`-C ~`,
// `-C /`, `-C /home`) puts everything under the home in the sandbox's reach. The text of the
// warning, naming the workspace, the home and what is at risk; "" for any other workspace.
// `workspace` is canonical (canonical_workspace); the home is $HOME, resolved.
std::string home_workspace_risk(const std::string& workspace);

// `s` on one line (newlines and tabs as spaces), cut at `max` bytes with "...".
std::string one_line(std::string s, std::size_t max);

// A person's answer to moatd's question: y = allow once, s = allow for this session,
// anything else (and no line at all) = deny.
struct PersonAnswer {
  bool allow = false;
  bool for_session = false;
};
PersonAnswer parse_answer(const std::optional<std::string>& line);
// Whether a line typed ahead of a question is an answer to it (y, yes, s, n, no).
bool is_answer(const std::string& line);
// The question as the person sees it, and the answer echoed back (both on stderr). The
// question is moatd's text, which quotes the model's command: control characters are
// shown as '?' so it cannot move the cursor or rewrite what is on the screen.
void print_question(const std::string& question);
void print_answer(const PersonAnswer& a);

// The person at the terminal of an interactive run. One thread reads stdin line by line:
// a line answers the question moatd is asking, if one waits for an answer; any other line is
// a steering message for the loop (delivered after the current batch). A line typed before
// the question came is taken as its answer only if it is one (y, yes, s, n, no), so a
// typed-ahead "y" still answers while a sentence stays a steering message.
class TerminalInput {
 public:
  TerminalInput(int fd, Inbox& inbox);
  ~TerminalInput() { close(); }
  TerminalInput(const TerminalInput&) = delete;
  TerminalInput& operator=(const TerminalInput&) = delete;

  // Asks and waits for the answer (parse_answer; end of input = deny). One at a time.
  PersonAnswer ask(const std::string& question);
  // Stops reading; a question still waiting is answered deny.
  void close();

 private:
  void read_lines();
  void take_line(std::string line);

  int fd_;
  Inbox& inbox_;
  std::mutex ask_mu_;  // one question at a time
  std::mutex mu_;
  std::condition_variable cv_;
  bool waiting_ = false;  // a question waits for its answer
  std::optional<std::string> answer_;
  bool eof_ = false;
  std::atomic<bool> stop_{false};
  std::thread reader_;
};

}  // namespace moat::agent
