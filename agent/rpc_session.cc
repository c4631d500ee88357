// agent/rpc_session.cc: the loop's side of `moat run --rpc` (rpc_session.h).
#include "agent/rpc_session.h"

#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>

#include "agent/compaction.h"
#include "agent/rpc.h"
#include "base/lf_lines.h"
#include "sessions/context.h"
#include "sessions/render_session.h"

namespace moat::agent {
namespace {

using nlohmann::json;

Message user_message(const std::string& text) {
  return {{"role", "user"}, {"content", {{{"type", "text"}, {"text", text}}}}};
}

class RpcServer {
 public:
  explicit RpcServer(RpcSessionParts& p) : p_(p) {}

  int serve(int in_fd) {
    std::thread reader([this, in_fd] { read_commands(in_fd); });
    while (std::optional<RpcCommand> job = next_job()) {
      if (job->kind == RpcKind::kCompact) run_compact(*job);
      else run_prompt(job->message);
    }
    reader.join();
    return last_code_;
  }

 private:
  // The next prompt or compaction, or none once the input has ended and none waits.
  std::optional<RpcCommand> next_job() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return pending_.has_value() || ended_; });
    return std::exchange(pending_, std::nullopt);
  }

  // compact: a summary of the context now, as the loop makes one when it nears the window;
  // its response comes when it is done, with the context's size before and after.
  void run_compact(const RpcCommand& c) {
    (void)sessions::answer_dangling_calls(*p_.store);
    const std::int64_t before = estimate_tokens(sessions::build_context(*p_.store).messages);
    CompactionSettings settings;
    settings.reserve_tokens = p_.config.compaction_reserve;
    settings.keep_recent_tokens = p_.config.compaction_keep_recent;
    settings.instructions = c.message;
    auto done = compact_now(*p_.store, settings, summarizer_for(*p_.provider, p_.cancel->token()));
    std::lock_guard<std::mutex> lock(mu_);
    running_ = false;
    json response = rpc_response(c, done ? "" : done.error().message());
    if (done) {
      response["tokens_before"] = before;
      response["tokens_after"] = estimate_tokens(sessions::build_context(*p_.store).messages);
    }
    p_.events->emit(response);
  }

  void run_prompt(const std::string& prompt) {
    // A run cut short (an abort mid-call) may have left calls without results.
    (void)sessions::answer_dangling_calls(*p_.store);
    LoopOutcome outcome;
    if (auto r = p_.store->append({{"type", "message"}, {"message", user_message(prompt)}}); !r) {
      outcome.stop = LoopStop::kStoreError;
      outcome.detail = "session store: " + r.error().message();
    } else {
      outcome = run_loop(*p_.provider, p_.call_tool, *p_.store, p_.system_prompt, p_.tools,
                         p_.config, p_.events->loop_events(), p_.cancel->token(), &inbox_);
    }
    last_code_ = p_.exit_code(outcome.stop);
    std::lock_guard<std::mutex> lock(mu_);
    running_ = false;
    // What came too late for this run is said, not kept for the next one.
    const std::size_t late = inbox_.take_steering().size();
    std::size_t later = 0;
    while (inbox_.take_follow_up()) ++later;
    if (late + later > 0)
      p_.events->emit({{"type", "note"},
                       {"message", std::to_string(late + later) +
                                       " steering or follow-up message(s) came after the run "
                                       "ended and were not delivered"}});
    p_.events->result(outcome, last_code_, p_.records);
  }

  void read_commands(int fd) {
    std::string pending;
    char buf[65536];
    for (;;) {
      const ssize_t n = ::read(fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      take_lf_lines(pending, std::string_view(buf, static_cast<std::size_t>(n)),
                    [this](std::string line) { take(line); });
    }
    std::lock_guard<std::mutex> lock(mu_);
    ended_ = true;
    cv_.notify_all();
  }

  // "N TEXT" (rpc_forward_line); the console checked it, the loop checks it again.
  void take(const std::string& forwarded) {
    const std::size_t space = forwarded.find(' ');
    const std::uint64_t line = std::strtoull(forwarded.c_str(), nullptr, 10);
    auto c = parse_rpc_command(space == std::string::npos
                                   ? std::string_view()
                                   : std::string_view(forwarded).substr(space + 1),
                               line);
    if (!c) return p_.events->emit(rpc_refusal(line, c.error().context));
    std::lock_guard<std::mutex> lock(mu_);
    json extra = json::object();
    const std::string error = act(*c, extra);
    if (error.empty() && c->kind == RpcKind::kCompact) return;  // answered once it is done
    json response = rpc_response(*c, error);
    if (error.empty()) response.update(extra);
    p_.events->emit(response);
  }

  // What the command does; "" when it succeeded, else why not; `extra` gets the fields its
  // response carries. Called with mu_ held.
  std::string act(const RpcCommand& c, json& extra) {
    switch (c.kind) {
      case RpcKind::kPrompt: return start(c);
      case RpcKind::kSteer:
        if (!running_) return "nothing is running (send a prompt)";
        inbox_.steer(c.message);
        return "";
      case RpcKind::kFollowUp:
        if (!running_) return "nothing is running (send a prompt)";
        inbox_.follow_up(c.message);
        return "";
      case RpcKind::kAbort:
        if (!running_) return "nothing is running";
        p_.cancel->request();
        return "";
      case RpcKind::kGetState: extra["state"] = state(); return "";
      case RpcKind::kSetModel: return set_model(c.model);
      case RpcKind::kGetTree:
        if (running_) return "a prompt is running: ask for the tree between prompts";
        extra["tree"] = sessions::render_tree(*p_.store);
        return "";
      case RpcKind::kFork: return fork(c.entry, extra);
      case RpcKind::kCompact: return start(c);
      case RpcKind::kAnswer: return "answers are the console's to send (it did not take this one)";
    }
    return "?";
  }

  // A prompt or a compaction for the main thread; one at a time.
  std::string start(const RpcCommand& c) {
    if (running_)
      return c.kind == RpcKind::kCompact
                 ? "a prompt is running: compact between prompts"
                 : "a prompt is running: steer it, queue a follow_up, or abort it first";
    running_ = true;
    p_.cancel->renew();
    pending_ = c;
    if (c.kind == RpcKind::kCompact) pending_->message = c.instructions;
    cv_.notify_all();
    return "";
  }

  // fork: the next prompt goes on from `name` (an entry id, a unique prefix, a label; none:
  // from before the last prompt), a new branch of this session's tree, as `moat run --resume
  // ID@ENTRY` makes one. The branch stays in this session's file: the loop holds only that
  // file, opened before it gave up the right to make others.
  std::string fork(const std::string& name, json& extra) {
    if (running_) return "a prompt is running: fork between prompts";
    std::string entry;
    if (!name.empty()) {
      auto found = sessions::resolve_entry(*p_.store, name);
      if (!found && found.error().code == ENOENT)
        return "no entry or label \"" + name + "\" in this session (/tree lists them)";
      if (!found) return found.error().message();
      entry = *found;
    } else {
      auto before = entry_before_last_prompt();
      if (!before) return before.error().message();
      entry = *before;
    }
    if (auto r = p_.store->set_leaf(entry); !r) return r.error().message();
    if (auto r = sessions::answer_dangling_calls(*p_.store, sessions::Unanswered::kBranched); !r)
      return r.error().message();
    extra["entry"] = entry;
    return "";
  }

  // The parent of the newest prompt on the current path.
  Result<std::string> entry_before_last_prompt() const {
    const std::vector<size_t> path = p_.store->path_indices(p_.store->leaf());
    for (size_t k = path.size(); k-- > 0;) {
      const sessions::Entry* m = p_.store->entry_message(path[k]);
      if (m && m->is_object() && m->value("role", "") == "user")
        return k > 0 ? p_.store->entry_id(path[k - 1]) : std::string();
    }
    return fail(std::string("no prompt to go back before: name an entry (/tree lists them)"));
  }

  std::string set_model(const std::string& spec) {
    if (running_) return "a prompt is running: set the model between prompts";
    auto choice = p_.open_model(spec);
    if (!choice) return choice.error().message();
    p_.provider = std::move(choice->provider);
    p_.model = spec;
    if (choice->context_window > 0) p_.config.context_window = choice->context_window;
    if (choice->max_output > 0)
      p_.config.max_output_tokens =
          static_cast<int>(std::min<std::int64_t>(choice->max_output, 1 << 30));
    p_.events->set_model(spec, choice->pricing);
    (void)p_.store->append({{"type", "model_change"},
                            {"provider", p_.provider->name()},
                            {"model", p_.provider->model()}});
    return "";
  }

  // get_state's `state` (docs/events.md). Called with mu_ held.
  json state() {
    json s = p_.records;
    s.update(json{{"id", p_.store->id()},
                  {"model", p_.model},
                  {"running", running_},
                  {"totals", p_.events->totals()}});
    return s;
  }

 private:
  RpcSessionParts& p_;
  Inbox inbox_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::optional<RpcCommand> pending_;  // the prompt or compaction the main thread runs next
  bool running_ = false;
  bool ended_ = false;
  int last_code_ = 0;
};

}  // namespace

std::string rpc_forward_line(std::uint64_t line, std::string_view text) {
  return std::to_string(line) + " " + std::string(text) + "\n";
}

int serve_rpc(RpcSessionParts parts, int in_fd) {
  RpcServer server(parts);
  return server.serve(in_fd);
}

}  // namespace moat::agent
