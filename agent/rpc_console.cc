// agent/rpc_console.cc: the console's side of `moat run --rpc` (rpc_console.h).
#include "agent/rpc_console.h"

#include <cstdint>
#include <utility>

#include "agent/events.h"
#include "agent/rpc_event_schema.h"
#include "agent/rpc_session.h"

namespace moat::agent {
namespace {

using nlohmann::json;

// moatd bounds the questions of a session; this bounds what the console keeps of them.
constexpr std::size_t kMaxOpenAsks = 64;
// A line of the loop's longer than this is dropped: only a broken loop writes one (its events
// are bounded by moatd's output limits and the model's), and it cannot be checked unheld.
constexpr std::size_t kMaxLoopLine = 16u << 20;
// Commands the loop has not yet responded to; past this the oldest is forgotten (its late
// response is then dropped). A client that waits for its responses never comes near it.
constexpr std::size_t kMaxForwarded = 4096;

}  // namespace

void RpcConsole::input(std::string_view bytes) {
  for (auto& line : lines_.feed(bytes)) take(std::move(line));
}

void RpcConsole::input_ended() {
  for (auto& line : lines_.finish()) {
    write(rpc_refusal(line.number, "line " + std::to_string(line.number) +
                                       ": the input ended without an LF after it (every "
                                       "command ends with LF); it was not run"));
  }
  for (const auto& [id, question] : asks_) send_(id, false, false);
  asks_.clear();
}

void RpcConsole::take(RpcLines::Line line) {
  const std::string at = "line " + std::to_string(line.number) + ": ";
  if (line.too_long)
    return write(rpc_refusal(line.number, at + "longer than " + std::to_string(kMaxRpcLine) +
                                              " bytes (the longest command taken); it was "
                                              "not run"));
  auto c = parse_rpc_command(line.text, line.number);
  if (!c) {
    json refusal = rpc_refusal(line.number, c.error().context);
    refusal["id"] = rpc_id_of(line.text);
    return write(refusal);
  }
  if (c->kind == RpcKind::kAnswer) return write(rpc_response(*c, answer(*c)));
  if (forwarded_.size() >= kMaxForwarded) forwarded_.erase(forwarded_.begin());
  forwarded_[line.number] = {c->id, rpc_command_name(c->kind)};
  for_loop_ += rpc_forward_line(line.number, line.text);
}

std::string RpcConsole::answer(const RpcCommand& c) {
  auto it = asks_.find(c.ask);
  if (it == asks_.end()) {
    std::string open;
    for (const auto& [id, q] : asks_) open += (open.empty() ? "" : ", ") + id;
    return "no open question has ask \"" + c.ask + "\" (open: " + (open.empty() ? "none" : open) +
           ")";
  }
  send_(c.ask, c.decision != "deny", c.decision == "allow_session");
  asks_.erase(it);
  return "";
}

void RpcConsole::ask(const std::string& ask, const std::string& question) {
  if (asks_.size() >= kMaxOpenAsks) {
    send_(asks_.begin()->first, false, false);  // the oldest is denied, as a timeout would
    asks_.erase(asks_.begin());
  }
  asks_[ask] = question;
  write({{"type", "ask"},
         {"ask", ask},
         {"question", question},
         {"choices", {"allow_once", "allow_session", "deny"}}});
}

void RpcConsole::loop_output(std::string_view bytes) {
  loop_carry_.append(bytes);
  std::size_t from = 0;
  for (std::size_t nl; (nl = loop_carry_.find('\n', from)) != std::string::npos; from = nl + 1) {
    if (!std::exchange(loop_overlong_, false))
      loop_line(std::string_view(loop_carry_).substr(from, nl - from));
  }
  loop_carry_.erase(0, from);
  if (loop_carry_.size() > kMaxLoopLine) {
    if (!loop_overlong_)
      std::fprintf(notes_, "moat: --rpc: dropped a line of the loop's longer than %zu bytes\n",
                   kMaxLoopLine);
    loop_overlong_ = true;
    loop_carry_.clear();
  }
}

// One line of the loop's: written again by the console as the event it parsed to, so a client
// reads exactly what was checked (a line with a key twice, `{"type":"note","type":"ask"}`,
// means different things to different parsers).
void RpcConsole::loop_line(std::string_view line) {
  const json e = json::parse(line, nullptr, false);
  std::string problem = e.is_discarded() ? "not JSON" : event_problem(e);
  if (problem.empty() && e["type"] == "ask") problem = "`ask` comes from the console only";
  if (problem.empty() && e["type"] == "response") problem = response_problem(e);
  if (problem.empty()) return write(e);
  std::fprintf(notes_, "moat: --rpc: dropped a line of the loop's: %s\n", problem.c_str());
  std::fflush(notes_);
}

// The loop responds to the commands the console handed it, once each: to a command's line,
// with its id and name (or, for a line it could not read, null ones).
std::string RpcConsole::response_problem(const json& e) {
  const std::int64_t line = e["line"].get<std::int64_t>();
  auto it = line < 0 ? forwarded_.end() : forwarded_.find(static_cast<std::uint64_t>(line));
  if (it == forwarded_.end()) return "a `response` to no command the loop was handed";
  const auto& [id, command] = it->second;
  const bool refusal = e["command"].is_null() && e["id"].is_null();
  if (!refusal && (e["command"] != command || e["id"] != id))
    return "a `response` whose id or command is not its line's";
  forwarded_.erase(it);
  return "";
}

void RpcConsole::loop_output_ended() {
  if (loop_carry_.empty() && !loop_overlong_) return;
  loop_carry_ += '\n';
  loop_output({});
}

void RpcConsole::write(const json& event) {
  const std::string line = json_line(event) + "\n";
  std::fwrite(line.data(), 1, line.size(), out_);
  std::fflush(out_);
}

}  // namespace moat::agent
