// agent/terminal_view.cc: the terminal view (terminal_view.h).
#include "agent/terminal_view.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <optional>

#include "agent/events.h"
#include "agent/host_files.h"
#include "agent/slash_commands.h"
#include "agent/text_events.h"
#include "agent/visible.h"
#include "base/ticks.h"
#include "tools/diff.h"
#include "tools/mcp_names.h"
#include "tools/registry.h"

namespace moat::agent {
namespace {

using nlohmann::json;

constexpr std::size_t kLiveLines = 4;             // output lines shown under a running call
constexpr std::size_t kFoldedLines = 3;           // ...and under a finished one
constexpr std::size_t kTailBytes = 4096;          // of a running call's output, kept to show
constexpr std::size_t kMaxEventLine = 16u << 20;  // a longer line of the loop's is dropped
constexpr const char kSpinner[] = "|/-\\";
constexpr std::size_t kDiffKept = 256u << 10;  // of one change's diff, kept for /diff
constexpr std::size_t kDiffLines = 400;        // /diff shows at most this many lines

std::string str(const json& e, const char* key) {
  auto it = e.find(key);
  return it != e.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// Untrusted text on one line of the screen: controls visible, cut to the terminal's width
// (a cut never splits a UTF-8 character).
std::string fit(const std::string& s, std::size_t width) {
  std::string shown = visible(s);
  if (shown.size() <= width) return shown;
  std::size_t cut = width > 3 ? width - 3 : 0;
  while (cut > 0 && (static_cast<unsigned char>(shown[cut]) & 0xC0) == 0x80) --cut;
  return shown.substr(0, cut) + "...";
}

bool is_terminal(FILE* f) { return ::isatty(::fileno(f)) == 1; }

std::size_t screen_width(FILE* f) {
  winsize ws{};
  if (::ioctl(::fileno(f), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 8) return ws.ws_col - 1u;
  return 79;
}

// The last `n` lines of `text` (a last line without LF counts), and how many came before.
std::vector<std::string> last_lines(const std::string& text, std::size_t n, std::size_t* above) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t nl = text.find('\n', start);
    lines.push_back(text.substr(start, nl == std::string::npos ? nl : nl - start));
    if (nl == std::string::npos) break;
    start = nl + 1;
  }
  if (above) *above = lines.size() > n ? lines.size() - n : 0;
  if (lines.size() > n) lines.erase(lines.begin(), lines.end() - static_cast<long>(n));
  return lines;
}

std::string seconds(std::chrono::steady_clock::duration d) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1fs", std::chrono::duration<double>(d).count());
  return buf;
}

// "allow (default.make)", "allow (ask.rm, by you)": a call's decision, rule and who decided.
std::string decision_text(const json& e) {
  std::string out = str(e, "decision");
  // The rule is an object (docs/events.md); its id names it.
  const std::string rule =
      e.contains("rule") && e["rule"].is_object() ? str(e["rule"], "id") : str(e, "rule");
  const bool by_person = str(e, "decided_by") == "user";
  if (!rule.empty() || by_person)
    out += " (" + rule + (by_person ? std::string(rule.empty() ? "" : ", ") + "by you" : "") + ")";
  return out;
}

std::int64_t num(const json& o, const char* key) {
  auto it = o.find(key);
  return it != o.end() && it->is_number_integer() ? it->get<std::int64_t>() : 0;
}

// Whether moatd's absolute `changed` is the file a tool's `path` argument names (relative to
// the workspace, or absolute).
bool names_file(const std::string& changed, const json& arguments) {
  const std::string arg = str(arguments, "path");
  if (arg.empty()) return false;
  const std::string norm = std::filesystem::path(arg).lexically_normal().string();
  return changed == norm ||
         (changed.size() > norm.size() && changed.ends_with("/" + norm) && norm[0] != '/');
}

// One changed file's diff from what the console saw of the call: an edit's own diff (the
// tool's, tools/diff.h), a created file's whole content from the write's arguments; for the
// rest, why there is none. The console runs nothing in the workspace to find out.
std::string change_diff(const json& e, const json& f, const json& arguments) {
  const std::string tool = str(e, "tool"), op = str(f, "op"), path = str(f, "path");
  const bool its_file = names_file(path, arguments);
  if (its_file && e.contains("diff") && e["diff"].is_string()) return e["diff"].get<std::string>();
  const std::optional<std::string> written = tools::written_content(tool, arguments);
  if (written && its_file && op == "create")
    return tools::unified_diff("", *written, str(arguments, "path"));
  if (op == "delete") return "  (deleted; its contents are not tracked)\n";
  if (written && its_file)
    return "  (replaced whole by " + tool + "; the earlier contents are not tracked)\n";
  return "  (changed by a command; its contents are not tracked)\n";
}

// At most `max` bytes of `diff`, cut at a line's end, saying so.
std::string kept(std::string diff, std::size_t max) {
  if (diff.size() <= max) return diff;
  const std::size_t cut = diff.rfind('\n', max);
  const std::size_t more = diff.size() - (cut == std::string::npos ? 0 : cut + 1);
  diff.resize(cut == std::string::npos ? 0 : cut + 1);
  return diff + "  ... the diff is cut here (" + std::to_string(more) + " more bytes)\n";
}

}  // namespace

void TerminalView::feed(std::string_view bytes) {
  carry_.append(bytes);
  std::size_t start = 0;
  for (std::size_t nl; (nl = carry_.find('\n', start)) != std::string::npos; start = nl + 1) {
    const json e = json::parse(carry_.begin() + static_cast<long>(start),
                               carry_.begin() + static_cast<long>(nl), nullptr, false);
    if (e.is_object()) event(e);
  }
  carry_.erase(0, start);
  if (carry_.size() > kMaxEventLine) carry_.clear();  // only a broken loop writes one
}

void TerminalView::event(const json& e) {
  const std::string type = str(e, "type");
  if (type == "session") {
    session_ = e;
    if (repl_)
      line("moat: session " + str(e, "id") + ", model " + str(e, "model") +
           ": type a prompt (/help lists the commands, Ctrl-D ends)");
    if (repl_ && !busy_) show_prompt();
    return;
  }
  if (repl_ && type == "result") return turn_over(e);
  if (type == "response") return responded(e);
  if (type == "text_delta") return text(str(e, "text"));
  if (type == "answer") return answered(e);
  if (type == "tool_call_start") return call_started(e);
  if (type == "tool_output") return call_output(e);
  if (type == "tool_call_decision") return call_decided(e);
  if (type == "tool_call_end") return call_ended(e);
  if (type == "mcp_status") return mcp_changed(e);
  const std::string shown = event_status_lines(e, said_);
  if (type == "error") said_ = str(e, "message");
  // A note or an error: long lines wrap at the terminal's width, at spaces.
  if (!shown.empty()) line(is_terminal(err_) ? wrapped(visible(shown), screen_width(err_)) : shown);
}

void TerminalView::text(const std::string& t) {
  if (t.empty()) return;
  take_block_off();
  std::string shown = visible(t);
  if (!is_terminal(out_)) {
    mid_line_ = shown.back() != '\n';
  } else {  // wrapped at the terminal's width, at spaces (the word being typed waits)
    shown = wrap_.feed(shown, screen_width(out_));
    mid_line_ = wrap_.holding() || wrap_.column() > 0;
  }
  std::fwrite(shown.data(), 1, shown.size(), out_);
  std::fflush(out_);
}

void TerminalView::end_line() {
  const std::string held = wrap_.flush();
  std::fwrite(held.data(), 1, held.size(), out_);
  if (mid_line_) std::fputc('\n', out_);
  std::fflush(out_);
  wrap_.newline();
  mid_line_ = false;
}

void TerminalView::line(const std::string& s) {
  erase();
  end_line();
  const std::string shown = visible(s);
  std::fprintf(err_, "%s%s", shown.c_str(), shown.empty() || shown.back() != '\n' ? "\n" : "");
  std::fflush(err_);
  draw();
}

void TerminalView::call_started(const json& e) {
  line("  > " + str(e, "tool") + ": " + str(e, "summary"));
  erase();
  running_.push_back({str(e, "id"), str(e, "tool"), str(e, "summary"),
                      std::chrono::steady_clock::now(), "", "",
                      e.value("arguments", json::object())});
  draw();
}

// An MCP call streams nothing but its server's progress, a line per notification
// (sandbox/mcp_call.cc): its latest line replaces the one shown. A running call is redrawn at
// most every ticks::kViewRedraw, however fast its output comes; tick() draws what came since.
void TerminalView::call_output(const json& e) {
  for (auto& r : running_)
    if (r.id == str(e, "id")) {
      if (tools::mcp::is_model_tool_name(r.tool)) r.tail.clear();
      r.tail += str(e, "chunk");
      if (r.tail.size() > kTailBytes) r.tail.erase(0, r.tail.size() - kTailBytes);
    }
  const auto now = std::chrono::steady_clock::now();
  if (live_ && now - last_tick_ >= ticks::kViewRedraw) {
    last_tick_ = now;
    erase();
    draw();
  }
}

// moatd's decision, before the call runs: on its live line (or a line of its own).
void TerminalView::call_decided(const json& e) {
  for (auto& r : running_)
    if (r.id == str(e, "id")) {
      r.decided = decision_text(e);
      if (!live_) line("    " + r.tool + " · " + r.decided);
    }
  if (live_) {
    erase();
    draw();
  }
}

// Folded: the call's decision, exit and time, and the last lines of its output.
void TerminalView::call_ended(const json& e) {
  erase();
  json arguments = json::object();  // a call that ended unseen (none) changed files too
  for (const auto& r : running_)
    if (r.id == str(e, "id")) arguments = r.arguments;
  note_changes(e, arguments);
  running_.erase(std::remove_if(running_.begin(), running_.end(),
                                [&](const Running& r) { return r.id == str(e, "id"); }),
                 running_.end());
  std::string head = e.value("is_error", false) ? "    [error] " : "    [ok] ";
  head += str(e, "tool");
  if (!str(e, "decision").empty()) head += " · " + decision_text(e);
  if (e.contains("exit_code") && e["exit_code"].is_number())
    head += " · exit " + e["exit_code"].dump();
  head += " · " + seconds(std::chrono::milliseconds(num(e, "duration_ms")));
  std::size_t above = 0;
  std::string shown = head + "\n";
  const auto lines = last_lines(str(e, "output"), kFoldedLines, &above);
  if (above > 0) shown += "    | ... " + std::to_string(above) + " more line(s) above\n";
  for (const auto& l : lines) shown += "    | " + l + "\n";
  line(shown);
}

void TerminalView::note_changes(const json& e, const json& arguments) {
  if (!e.contains("files_changed") || !e["files_changed"].is_array()) return;
  for (const auto& f : e["files_changed"])
    if (f.is_object())
      changed_.push_back({str(f, "op") + " " + str(f, "path") +
                              (str(f, "from").empty() ? "" : " (from " + str(f, "from") + ")"),
                          kept(change_diff(e, f, arguments), kDiffKept)});
}

// /diff: per file, its diff; at most kDiffLines lines, saying how many more there were.
std::string TerminalView::diff_text() const {
  if (changed_.empty()) return "moat: no file changed so far";
  std::string all;
  for (const auto& c : changed_) all += c.what + "\n" + c.diff;
  std::size_t end = 0;  // of the first kDiffLines lines
  for (std::size_t n = 0; n < kDiffLines && end < all.size(); ++n)
    end = std::min(all.find('\n', end), all.size() - 1) + 1;
  std::string out = "moat: files changed so far, each with its diff:\n" + all.substr(0, end);
  if (end < all.size())
    out += "moat: /diff is cut at " + std::to_string(kDiffLines) + " lines; " +
           std::to_string(std::count(all.begin() + static_cast<long>(end), all.end(), '\n')) +
           " more are not shown";
  return out;
}

// After each answer: its tokens by bucket, the cost so far, the share of the prompt read
// from the cache.
void TerminalView::answered(const json& e) {
  const json usage = e.value("usage", json::object());
  const std::int64_t in = num(usage, "input"), read = num(usage, "cacheRead");
  const std::int64_t written = num(usage, "cacheWrite") + num(usage, "cacheWrite1h");
  const std::int64_t prompt = in + read + written;
  double so_far = 0;
  if (e.contains("totals") && e["totals"].is_object()) totals_ = e["totals"];
  if (e.contains("totals") && e["totals"].contains("cost"))
    so_far = e["totals"]["cost"].value("total", 0.0);
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "  tokens: %lld in, %lld cache read, %lld cache write, %lld out · $%.4f so far · "
                "cache hit %lld%%",
                static_cast<long long>(in), static_cast<long long>(read),
                static_cast<long long>(written), static_cast<long long>(num(usage, "output")),
                so_far, static_cast<long long>(prompt > 0 ? read * 100 / prompt : 0));
  line(buf);
}

void TerminalView::tick() {
  const auto now = std::chrono::steady_clock::now();
  if (!live_ || running_.empty() || now - last_tick_ < ticks::kViewRedraw) return;
  last_tick_ = now;
  ++frame_;
  take_block_off();
  draw();
}

void TerminalView::erase() {
  // The model's word held back for wrapping comes before what is written next (a question).
  const std::string held = wrap_.flush();
  std::fwrite(held.data(), 1, held.size(), out_);
  if (!held.empty()) std::fflush(out_);
  take_block_off();
}

void TerminalView::take_block_off() {
  if (drawn_ == 0) return;
  std::fprintf(err_, "\x1b[%dA\x1b[J", drawn_);  // up to the block's first line; clear below
  drawn_ = 0;
}

// The running calls: a spinner, the time, the summary, and the last lines of the output.
void TerminalView::draw() {
  if (!live_ || running_.empty()) return;
  end_line();
  const std::size_t width = screen_width(err_);
  std::string block;
  for (const auto& r : running_) {
    block += fit(std::string("  ") + kSpinner[frame_ % 4] + " " + r.tool +
                     (r.decided.empty() ? "" : " · " + r.decided) + " " +
                     seconds(std::chrono::steady_clock::now() - r.started) + ": " + r.summary,
                 width) +
             "\n";
    ++drawn_;
    for (const auto& l : last_lines(r.tail, kLiveLines, nullptr)) {
      block += fit("    | " + l, width) + "\n";
      ++drawn_;
    }
  }
  std::fputs(block.c_str(), err_);
  std::fflush(err_);
}

}  // namespace moat::agent

namespace moat::agent {

// The answers come from what the events said; nothing is asked of the loop.
bool TerminalView::command(const std::string& typed) {
  const std::optional<SlashLine> slash = read_slash(typed);
  if (!slash || !slash->command || slash->command->owner != SlashOwner::kView) return false;
  line(answer(slash->command->id));
  return true;
}

std::string TerminalView::answer(Slash command) const {
  switch (command) {
    case Slash::kCost: return cost_text();
    case Slash::kDiff: return diff_text();
    case Slash::kPolicy: {
      std::string out = "moat: policy " + str(session_, "policy_hash") + ", layers:";
      for (const auto& l : session_.value("policy_layers", json::array()))
        out += "\n  " + str(l, "layer") + " " + str(l, "name") + " (" + str(l, "file") + ")";
      return out;
    }
    case Slash::kMcp: return mcp_text();
    case Slash::kModel:
      return "moat: model " + str(session_, "model") + " (provider " + str(session_, "provider") +
             ")";
    default: return "";
  }
}

// A server's state changed (moatd's mcp_status frame): its entry of the session event's
// mcp_servers is replaced, so /mcp shows the latest.
void TerminalView::mcp_changed(const json& e) {
  const json server = e.value("server", json::object());
  if (!server.is_object() || str(server, "name").empty()) return;
  json& servers = session_["mcp_servers"];
  if (!servers.is_array()) servers = json::array();
  for (json& s : servers)
    if (s.is_object() && str(s, "name") == str(server, "name")) {
      s = server;
      return;
    }
  servers.push_back(server);
}

namespace {

// "started", "restarting (restart 2 of 3)", "started (restarted 1 of 3 times)".
std::string mcp_state_text(const json& s) {
  const std::string n = std::to_string(num(s, "restarts"));
  const std::string of = std::to_string(num(s, "max_restarts"));
  if (str(s, "state") == "restarting") return "restarting (restart " + n + " of " + of + ")";
  if (num(s, "restarts") > 0) return str(s, "state") + " (restarted " + n + " of " + of + " times)";
  return str(s, "state");
}

}  // namespace

// /mcp: the servers moatd ran for the session (welcome, through the session event, then each
// mcp_status event), each with its state, its log and its tools' decisions. line() shows the
// servers' text escaped.
std::string TerminalView::mcp_text() const {
  const json servers = session_.value("mcp_servers", json::array());
  if (!servers.is_array() || servers.empty())
    return "moat: no MCP server in this session (docs/mcp.md: [[mcp.server]])";
  std::string out = "moat: MCP servers:";
  for (const json& s : servers) {
    if (!s.is_object()) continue;
    const json tools = s.value("tools", json::array());
    out += "\n  " + str(s, "name") + " · " + mcp_state_text(s) + " · " +
           std::to_string(tools.is_array() ? tools.size() : 0) + " tools · log " + str(s, "log");
    if (!str(s, "error").empty()) out += "\n    error: " + str(s, "error");
    if (s.contains("tools_changed") && s["tools_changed"] == true)
      out += "\n    it says its tools changed: this session keeps those it listed at its start";
    for (const json& t : tools.is_array() ? tools : json::array())
      if (t.is_object())
        out += "\n    " + str(t, "name") + " · " + str(t, "decision") +
               (str(t, "decision") == "deny" ? " (not offered)" : "");
  }
  return out;
}

std::string TerminalView::cost_text() const {
  const json usage = totals_.value("usage", json::object());
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "moat: %lld answers: %lld in, %lld cache read, %lld cache write, %lld out; $%.4f",
                static_cast<long long>(num(totals_, "answers")),
                static_cast<long long>(num(usage, "input")),
                static_cast<long long>(num(usage, "cacheRead")),
                static_cast<long long>(num(usage, "cacheWrite") + num(usage, "cacheWrite1h")),
                static_cast<long long>(num(usage, "output")),
                totals_.contains("cost") ? totals_["cost"].value("total", 0.0) : 0.0);
  return buf;
}

// A turn of a terminal session has ended: how (one line), then the prompt again.
void TerminalView::turn_over(const json& result) {
  const std::string lines = event_status_lines(result, said_);
  said_.clear();
  const std::size_t a = lines.find("moat: ");
  if (a != std::string::npos) line(lines.substr(a, lines.find('\n', a) - a));
  for (const char* key : {"session_file", "audit_log", "host_executed", "host_executed_unknown"})
    if (result.contains(key)) session_[key] = result[key];
  busy_ = false;
  show_prompt();
}

// The loop's answer to a command the console sent for the person (agent/terminal_repl.h).
void TerminalView::responded(const json& e) {
  const std::string command = str(e, "command");
  const bool ok = e.value("success", false);
  const bool job = command == "prompt" || command == "compact";
  if (!ok) line("moat: " + str(e, "error"));
  if (ok && command == "steer")
    line("moat: message queued: the model gets it after the current step");
  if (ok && command == "get_tree") line(str(e, "tree"));
  if (ok && command == "fork")
    line("moat: the next prompt goes on from " +
         (str(e, "entry").empty() ? std::string("the start") : str(e, "entry")) +
         ", a new branch of this session (/tree shows it)");
  if (ok && command == "compact")
    line("moat: compacted: the context went from about " + std::to_string(num(e, "tokens_before")) +
         " to about " + std::to_string(num(e, "tokens_after")) + " tokens");
  if (job && (!ok || command == "compact")) busy_ = false;
  if (repl_ && !busy_ && command != "steer") show_prompt();
}

void TerminalView::show_prompt() {
  erase();
  end_line();
  std::fputs("> ", err_);
  std::fflush(err_);
}

void TerminalView::ended() {
  if (!repl_) return;
  erase();
  end_line();
  char cost[64];
  std::snprintf(cost, sizeof cost, "$%.4f",
                totals_.contains("cost") ? totals_["cost"].value("total", 0.0) : 0.0);
  std::string out = "\nmoat: session " + str(session_, "id") +
                    " ended: " + std::to_string(num(totals_, "answers")) + " answers, " + cost +
                    "\n";
  if (!str(session_, "session_file").empty())
    out += "moat: session file: " + str(session_, "session_file") + "\n";
  if (!str(session_, "audit_log").empty())
    out += "moat: audit log:    " + str(session_, "audit_log") + "\n";
  out += host_files_lines(session_);  // the session's, as its last turn's result named them
  if (!str(session_, "session_file").empty())
    out += "moat: moat run --resume " + str(session_, "id") + " goes on with it\n";
  const std::string shown = visible(out);
  std::fputs(shown.c_str(), err_);
  std::fflush(err_);
}

}  // namespace moat::agent
