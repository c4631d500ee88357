// agent/rpc_console.h: the console's side of `moat run --rpc`. It reads the client's lines,
// checks each one (agent/rpc.h), answers moatd's questions itself (an `ask` event out, an
// `answer` command in: the loop never sees either) and hands the other commands to the loop.
// On stdout it writes whole lines only, its own and the loop's, so they never interleave. The
// loop is not trusted with the stream (issue 26, item 2): each of its lines is an event
// docs/events.md documents (agent/rpc_event_schema.h), never an `ask`, and a `response` only
// to a command the console handed it and that has had none; anything else is dropped, with a
// note on stderr.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "agent/rpc.h"

namespace moat::agent {

class RpcConsole {
 public:
  // Sends a person's answer to moatd over the console channel.
  using SendAnswer = std::function<void(const std::string& ask, bool allow, bool for_session)>;
  RpcConsole(FILE* out, SendAnswer send, FILE* notes = stderr)
      : out_(out), notes_(notes), send_(std::move(send)) {}

  // The client's bytes; at the end, a last line without its LF is refused and every question
  // still open is answered deny (nobody is left to answer it).
  void input(std::string_view bytes);
  void input_ended();
  // While the bytes for the loop pass this, stdin is not read (the client waits, not moat).
  bool wants_input() const { return for_loop_.size() < kMaxRpcLine; }
  // Checked commands for the loop (rpc_forward_line), and how many of their bytes it took.
  const std::string& for_loop() const { return for_loop_; }
  void sent_to_loop(std::size_t n) { for_loop_.erase(0, n); }

  // moatd asks: an `ask` event; the question waits for an `answer` command.
  void ask(const std::string& ask, const std::string& question);
  // The console channel ended: no question is open any more.
  void asks_gone() { asks_.clear(); }

  // The loop's stdout (its events): passed on a whole line at a time.
  void loop_output(std::string_view bytes);
  void loop_output_ended();

 private:
  void take(RpcLines::Line line);
  std::string answer(const RpcCommand& c);
  void write(const nlohmann::json& event);
  void loop_line(std::string_view line);
  std::string response_problem(const nlohmann::json& e);

  FILE* out_;
  FILE* notes_;
  SendAnswer send_;
  RpcLines lines_;
  std::string for_loop_;
  std::map<std::string, std::string> asks_;  // open questions: ask id -> question
  std::string loop_carry_;                   // the loop's line being written
  bool loop_overlong_ = false;               // dropping a line past kMaxLoopLine to its LF
  // Commands handed to the loop that have had no response yet: input line -> id, command.
  std::map<std::uint64_t, std::pair<nlohmann::json, std::string>> forwarded_;
};

}  // namespace moat::agent
