// agent/rpc.h: `moat run --rpc`'s input: JSON commands, one per LF-ended line, each checked
// against the commands docs/events.md documents, and the response every command gets.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace moat::agent {

// The longest input line taken (a prompt may be long; a line with no end may not make moat
// hold more). A longer line is refused whole, and reading goes on after its LF.
inline constexpr std::size_t kMaxRpcLine = 1u << 20;

enum class RpcKind {
  kPrompt,
  kSteer,
  kFollowUp,
  kAbort,
  kAnswer,
  kGetState,
  kSetModel,
  kGetTree,
  kFork,
  kCompact
};

struct RpcCommand {
  RpcKind kind = RpcKind::kGetState;
  nlohmann::json id;       // the client's id (string or integer), echoed; null when not given
  std::uint64_t line = 0;  // the input line it came on, from 1
  std::string message;     // prompt, steer, follow_up
  std::string ask;         // answer: the id of moatd's question (an `ask` event's `ask`)
  std::string decision;    // answer: allow_once, allow_session or deny
  std::string model;       // set_model
  std::string entry;       // fork: the entry to go on from ("": before the last prompt)
  std::string instructions;  // compact: what the summary should keep in view
};

// The command's name on the wire ("follow_up").
const char* rpc_command_name(RpcKind kind);

// `text` as a command: a JSON object whose "type" is a command and whose other fields are
// that command's, each of its type. The error names the line, what is wrong and what would
// be accepted ("line 3: unknown command \"promt\" (accepted: prompt, steer, ...)").
Result<RpcCommand> parse_rpc_command(std::string_view text, std::uint64_t line);

// The `response` event that answers `c` (docs/events.md); `error` when it failed.
nlohmann::json rpc_response(const RpcCommand& c, const std::string& error = {});
// The response to a line that is no command: its number and why.
nlohmann::json rpc_refusal(std::uint64_t line, const std::string& error);
// The `id` of a line that failed to parse but is an object with a usable id, else null, so
// a client can still match the refusal to what it sent.
nlohmann::json rpc_id_of(std::string_view text);

// Splits input into lines, holding at most kMaxRpcLine bytes of a line: a longer one is
// given as too long (its start only) once its LF arrives, and its bytes are dropped.
class RpcLines {
 public:
  struct Line {
    std::uint64_t number = 0;
    std::string text;  // without its LF
    bool too_long = false;
  };
  std::vector<Line> feed(std::string_view bytes);
  // At end of input: what came after the last LF, if anything (a line without its LF).
  std::vector<Line> finish();
  // Bytes held for the line being read (never more than kMaxRpcLine).
  std::size_t held() const { return partial_.size(); }

 private:
  std::string partial_;
  bool overlong_ = false;
  std::uint64_t number_ = 0;
};

}  // namespace moat::agent
