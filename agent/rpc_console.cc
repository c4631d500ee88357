// agent/rpc_console.cc: the console's side of `moat run --rpc` (rpc_console.h).
#include "agent/rpc_console.h"

#include "agent/events.h"
#include "agent/rpc_session.h"

namespace moat::agent {
namespace {

using nlohmann::json;

// moatd bounds the questions of a session; this bounds what the console keeps of them.
constexpr std::size_t kMaxOpenAsks = 64;
// A line of the loop's longer than this is passed on as it is: only a broken loop writes one
// (its events are bounded by moatd's output limits and the model's).
constexpr std::size_t kMaxLoopLine = 16u << 20;

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
  const std::size_t nl = loop_carry_.rfind('\n');
  const std::size_t end = loop_carry_.size() > kMaxLoopLine ? loop_carry_.size()
                          : nl == std::string::npos         ? 0
                                                            : nl + 1;
  if (end == 0) return;
  std::fwrite(loop_carry_.data(), 1, end, out_);
  std::fflush(out_);
  loop_carry_.erase(0, end);
}

void RpcConsole::loop_output_ended() {
  if (loop_carry_.empty()) return;
  loop_carry_ += '\n';
  loop_output({});
}

void RpcConsole::write(const json& event) {
  const std::string line = json_line(event) + "\n";
  std::fwrite(line.data(), 1, line.size(), out_);
  std::fflush(out_);
}

}  // namespace moat::agent
