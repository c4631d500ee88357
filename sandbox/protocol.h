// sandbox/protocol.h: moatd's wire protocol: length-prefixed JSON frames over a Unix stream
// socket (docs/protocol.md). A frame is a 4-byte big-endian payload length, then that many
// bytes of UTF-8 JSON holding one object with a "type".
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "base/result.h"
#include "tools/tool.h"

namespace moat::sandbox {

// The protocol's versions (docs/protocol.md, "Versions"). A client's hello says the lowest
// version that has everything it will do on the connection; moatd accepts every version from
// kMinProtocolVersion to kProtocolVersion, the newest it speaks, which its welcome states.
//   1: the first.
//   2: the client may pipeline one exec frame, fds and all, right behind its hello, before the
//      welcome. A moatd of version 1 refuses a hello of 2 by its version, or (one older than
//      the pipelining) the fds that came before its welcome: is_pipelining_refused.
inline constexpr int kMinProtocolVersion = 1;
inline constexpr int kPipelinedExecVersion = 2;
inline constexpr int kProtocolVersion = 2;

// What one client can make moatd hold or echo: every bound lives here, once, and
// docs/protocol.md ("Bounds") states each. A frame that breaks one gets an error frame and
// a close for that client only.
inline constexpr std::size_t kMaxFrameBytes = 16u << 20;  // 16 MiB of payload
// Arrays and objects nested in one frame: the JSON code that walks a frame (copy, dump,
// schema checks) recurses, and 100,000 levels overflow a thread's stack.
inline constexpr int kMaxJsonDepth = 64;
inline constexpr std::size_t kMaxCallIdBytes = 128;
inline constexpr std::size_t kMaxAskIdBytes = 64;  // moatd's ask ids are 16 hex digits
// A console frame's session id (32 hex digits) and token (64 hex digits).
inline constexpr std::size_t kMaxConsoleFieldBytes = 128;
inline constexpr std::size_t kMaxToolNameBytes = 128;
// hello.workspace and a call's arguments.path: PATH_MAX, the longest path the kernel takes.
inline constexpr std::size_t kMaxPathBytes = 4096;
// A call's arguments.command: MAX_ARG_STRLEN, the longest argument execve takes (bash -c).
inline constexpr std::size_t kMaxCommandBytes = 128u << 10;
// A whole answer frame (its fields are an ask id and two words).
inline constexpr std::size_t kMaxAnswerBytes = 4096;
// What an error frame's message quotes; longer messages are cut.
inline constexpr std::size_t kMaxErrorMessageBytes = 4096;
// welcome.mcp_servers: the policy's bound on servers, the MCP client's on one server's tools.
inline constexpr std::size_t kMaxMcpStatusServers = 32;
inline constexpr std::size_t kMaxMcpStatusTools = 256;
// A status's restart counts: McpHost::kMaxRestarts is 3; a client takes up to this many.
inline constexpr int kMaxMcpRestartsShown = 64;
// Calls running at once on one connection (each holds a thread and its arguments), and
// the bytes of those calls' frames together.
inline constexpr std::size_t kMaxConcurrentCalls = 64;
inline constexpr std::size_t kMaxRunningCallBytes = 64u << 20;
// Connections a shared moatd (--socket) serves at once, per peer uid and in all: a
// connection beyond one gets an error frame and is closed (sandbox/connection_limit.h).
inline constexpr std::size_t kMaxConnectionsPerUser = 64;
inline constexpr std::size_t kMaxConnections = 1024;
// From connect to a complete hello; from a frame's first byte to its last.
inline constexpr std::chrono::seconds kHelloDeadline{10};
inline constexpr std::chrono::seconds kFrameDeadline{10};
// An exec frame (moat sandbox exec): argv words, and the variables it sets (each name at most
// kMaxToolNameBytes). argv and env values together stay within kMaxCommandBytes: the command
// is judged as one line, like a bash call's.
inline constexpr std::size_t kMaxExecArgs = 4096;
inline constexpr std::size_t kMaxExecEnv = 64;
// The fds an exec frame carries (its stdin, stdout and stderr), and how many sets one
// connection may hold: one waiting for its frame and one running.
inline constexpr std::size_t kExecFds = 3;
// hello.binds: the bind mounts one session may ask for (moat sandbox exec --ro-bind, --bind);
// moatd opens and holds each source until the session exists.
inline constexpr std::size_t kMaxBinds = 32;
// hello.env: the person's variables that the policy's system and user layers' MCP servers
// name (docs/mcp.md "env"): at most kMaxExecEnv names, names and values together at most
// kMaxHelloEnvBytes.
inline constexpr std::size_t kMaxHelloEnvBytes = 32u << 10;
// A frame before hello (the hello itself, or a console frame): the largest hello the bounds
// above allow, every path (the workspace, two per bind) of kMaxPathBytes and hello.env's bytes
// with each byte as a six-byte JSON escape, plus 64 KiB for the other fields. An
// unauthenticated connection holds no more (a partial 16 MiB frame each grew moatd by 41 MB:
// issue 26 item 11).
inline constexpr std::size_t kMaxHelloFrameBytes =
    ((1 + 2 * kMaxBinds) * kMaxPathBytes + kMaxHelloEnvBytes) * 6 + (64u << 10);
static_assert(kMaxHelloFrameBytes <= kMaxFrameBytes / 8, "far below the frame limit");
// What all connections that have not said hello yet may hold at once, and one local user's
// share of it: one user cannot take the budget from the others, nor grow moatd past it.
inline constexpr std::size_t kMaxUnauthenticatedBytes = 32u << 20;
inline constexpr std::size_t kMaxUnauthenticatedBytesPerUser = kMaxUnauthenticatedBytes / 4;
static_assert(kMaxUnauthenticatedBytesPerUser >= 2 * kMaxHelloFrameBytes);
// Frames moatd has queued for one client and the client has not read, across all its calls:
// past this the client is disconnected rather than let grow moatd (sandbox/frame_writer.h).
inline constexpr std::size_t kMaxQueuedBytes = 64u << 20;

// Encodes one frame, or fails when its payload would exceed kMaxFrameBytes (moatd, whose
// replies may echo what a client sent, answers that with a short error instead).
Result<std::string> try_encode_frame(const nlohmann::json& message);
// The same for a caller that keeps payloads under kMaxFrameBytes; an oversized one is a bug.
std::string encode_frame(const nlohmann::json& message);

// Sends one frame whole on a stream socket; MSG_NOSIGNAL, so a peer that hung up is an error
// here, not a SIGPIPE.
Result<void> send_frame(int fd, const nlohmann::json& message);

// Incremental decoder: feed it bytes as they arrive, however they are split; it yields
// whole frames. The first error is sticky: after it, the stream cannot be resynchronised
// and the connection must be closed.
class FrameDecoder {
 public:
  FrameDecoder() = default;
  explicit FrameDecoder(std::size_t max_frame_bytes) : max_frame_(max_frame_bytes) {}
  // Frames announced over this are refused (moatd: kMaxHelloFrameBytes until the hello is
  // answered, then kMaxFrameBytes).
  void set_max_frame_bytes(std::size_t max) { max_frame_ = max; }
  // Buffers bytes. The buffer grows to the announced frame's exact size (not by doubling), and
  // a buffer larger than 256 KiB is given back once the frames in it have been taken.
  void feed(std::string_view bytes);
  // The next complete frame parsed as a JSON object, nullopt when more bytes are needed, or
  // an error naming the problem ("frame of 20000000 bytes exceeds the 16777216-byte limit",
  // "malformed JSON at byte 12: ...", "frame is not a JSON object", "frame nests arrays
  // and objects deeper than 64 levels").
  Result<std::optional<nlohmann::json>> next();
  std::size_t buffered() const { return buf_.size() - pos_; }
  // True when the bytes buffered hold the next frame whole (next() would not ask for more).
  bool holds_frame() const;
  // The memory the buffer holds (its capacity): what a connection costs moatd.
  std::size_t held_bytes() const { return buf_.capacity(); }
  // The most the buffer ever held.
  std::size_t peak_held_bytes() const { return peak_held_; }
  // The payload size of the frame next() returned last.
  std::size_t last_payload_bytes() const { return last_payload_; }
  // How many frames next() has returned: a change means a new frame has begun.
  std::uint64_t frames() const { return frames_; }

 private:
  std::string buf_;
  std::size_t pos_ = 0;
  std::size_t max_frame_ = kMaxFrameBytes;
  std::size_t peak_held_ = 0;
  std::size_t last_payload_ = 0;
  std::uint64_t frames_ = 0;
  std::optional<Error> error_;
};

// The messages (docs/protocol.md, "Messages"): one struct per message type, each with its
// one encoder (to_json, which adds the "type") and its one decoder (from_json, which
// checks every field the message carries: presence, JSON type and bound). Only this file
// spells a frame's fields. Optional fields take their documented default when absent.

// Client -> moatd.

// A host directory or file a session asks to see at `target` (hello.binds). Both paths are
// absolute and normalised (is_normalized_absolute: no ".", "..", "//", trailing "/" or NUL),
// each at most kMaxPathBytes; moatd then checks them against the policy (sandbox/binds.h).
struct BindMount {
  std::string source;     // host path, with no symlink at any component
  std::string target;     // where it appears inside the sandbox
  bool writable = false;  // --bind; false: --ro-bind
  bool operator==(const BindMount&) const = default;
};

enum class NetworkRequest { kAsPolicyGrants, kOff, kOn };

struct HelloMsg {
  static constexpr const char* kType = "hello";
  std::int64_t version = kMinProtocolVersion;  // the lowest that has what the client will do
  std::string workspace;  // at most kMaxPathBytes, no NUL byte
  bool headless = true;   // a value that is not a boolean counts as absent
  std::string client;     // at most kMaxToolNameBytes; optional
  // Optional "network": absent = the proxy when the policy grants some connection (moat run);
  // false = no network at all; true = the proxy, and the hello is refused when the policy
  // grants none.
  NetworkRequest network = NetworkRequest::kAsPolicyGrants;
  std::vector<BindMount> binds;  // optional: at most kMaxBinds
  // Optional: the client is the person's own CLI (moat sandbox exec) and asks that its exec
  // frames be judged as typed. It can only narrow: a resident moatd grants it when its own
  // check of the peer agrees (sandbox/resident_peer.h); moat run never asks, since its
  // connection passes to the agent loop.
  bool typed_exec = false;
  // Optional: NAME -> value of the person's variables (the moat process's) that the loaded
  // system and user layers' MCP servers declare in `env`. moatd passes each server only what
  // a trusted declaration of it names; never to a call. Bounds: kMaxExecEnv, kMaxHelloEnvBytes.
  std::map<std::string, std::string> env{};
  nlohmann::json to_json() const;
  static Result<HelloMsg> from_json(const nlohmann::json& m);
};

struct CallMsg {
  static constexpr const char* kType = "call";
  std::string id;            // 1 to kMaxCallIdBytes
  std::string tool;          // at most kMaxToolNameBytes
  nlohmann::json arguments;  // an object; its "path" and "command" within their bounds
  nlohmann::json to_json() const;
  static Result<CallMsg> from_json(const nlohmann::json& m);
};

// Runs argv (no shell) with the caller's stdin, stdout and stderr, which travel with the frame
// as SCM_RIGHTS (docs/protocol.md, "exec"). The result's details say how it ended.
struct ExecMsg {
  static constexpr const char* kType = "exec";
  std::string id;                          // 1 to kMaxCallIdBytes
  std::vector<std::string> argv;           // 1 to kMaxExecArgs words, no NUL
  std::string cwd;                         // optional: a directory inside the workspace
  std::map<std::string, std::string> env;  // optional: NAME=value set for the command
  double timeout_s = 0;                    // optional: 0 = the policy's wall time
  nlohmann::json to_json() const;
  static Result<ExecMsg> from_json(const nlohmann::json& m);
};

// A name ExecMsg::env may hold: a variable name as sh(1) takes one in an assignment
// ([A-Za-z_][A-Za-z0-9_]*), which is what the policy's parser reads of the judged line.
bool is_env_name(const std::string& s);

struct CancelMsg {
  static constexpr const char* kType = "cancel";
  std::string id;
  nlohmann::json to_json() const;
  static Result<CancelMsg> from_json(const nlohmann::json& m);
};

struct AnswerMsg {
  static constexpr const char* kType = "answer";
  std::string ask;           // at most kMaxAskIdBytes
  bool allow = false;        // "decision": "allow" or "deny"
  bool for_session = false;  // "scope": "session" or "once" (the default)
  nlohmann::json to_json() const;
  // payload_bytes: the frame's size, refused over kMaxAnswerBytes before any field is read.
  static Result<AnswerMsg> from_json(const nlohmann::json& m, std::size_t payload_bytes = 0);
};

struct ByeMsg {  // both ways: the client ends the session, moatd confirms
  static constexpr const char* kType = "bye";
  nlohmann::json to_json() const;
  static Result<ByeMsg> from_json(const nlohmann::json& m);
};

struct ConsoleMsg {  // first frame of a console connection to a shared moatd
  static constexpr const char* kType = "console";
  std::string session;  // at most kMaxConsoleFieldBytes
  std::string token;    // at most kMaxConsoleFieldBytes
  nlohmann::json to_json() const;
  static Result<ConsoleMsg> from_json(const nlohmann::json& m);
};

// moatd -> client. The client trusts none of it: each decoder checks what its reader uses.

// One of the session's MCP servers as the hello left it (welcome.mcp_servers: the terminal's
// /mcp shows them). `error` is the server's text in part: a client shows it escaped.
struct McpServerStatus {
  struct Tool {
    std::string name;      // as the model calls it: mcp__SERVER__TOOL
    std::string decision;  // without arguments: "allow", "ask" (both offered) or "deny"
    bool operator==(const Tool&) const = default;
  };
  std::string name;
  // One of kMcpStates: "started"; "not started" (start = "on-use": listed, then stopped until
  // its first call); "ended" (it exited or its connection ended: `error` says how; started
  // again at its next call); "restarting" (restart `restarts` of `max_restarts` under way);
  // "failed" (it did not start or list its tools, or ended too often: `error` says why, its
  // log says more).
  std::string state;
  std::string error;  // encoded cut to kMaxErrorMessageBytes at a UTF-8 boundary
  std::string log;    // its stderr's file, at most kMaxPathBytes
  std::vector<Tool> tools;  // every tool it listed that has a model name, at most 256
  // Restarts used so far in the session, of at most `max_restarts` (both 0 to
  // kMaxMcpRestartsShown; optional, default 0).
  int restarts = 0;
  int max_restarts = 0;
  // The server said its tools changed (notifications/tools/list_changed) after they were
  // listed: the session keeps offering those it listed at its start. Optional, default false.
  bool tools_changed = false;
  bool operator==(const McpServerStatus&) const = default;
  nlohmann::json to_json() const;
  static Result<McpServerStatus> from_json(const nlohmann::json& j, const std::string& where);
};

// McpServerStatus::state's words (the decoder refuses any other).
inline constexpr const char* kMcpStates[] = {"started", "not started", "ended", "restarting",
                                             "failed"};

// Unasked, after the welcome: one MCP server's state changed (it started, ended, is restarting,
// failed, or said its tools changed). Sent only on a change, so at most a few per server start
// (McpHost::kMaxRestarts bounds the starts): the terminal's /mcp shows the latest.
struct McpStatusMsg {
  static constexpr const char* kType = "mcp_status";
  McpServerStatus server;
  nlohmann::json to_json() const;
  static Result<McpStatusMsg> from_json(const nlohmann::json& m);
};

struct WelcomeMsg {
  static constexpr const char* kType = "welcome";
  std::int64_t version = kProtocolVersion;
  std::string session;
  // The granted tools. An entry without a string name is skipped; its other fields are
  // taken when they have their type.
  std::vector<tools::ToolSpec> tools;
  std::string workspace;
  std::string audit;  // the audit file's path; "" without an audit log
  nlohmann::json sandbox = nlohmann::json::object();  // what was applied (free-form)
  std::string console_token;                          // interactive sessions on a shared moatd only
  nlohmann::json policy = nlohmann::json::object();   // its layers and hash (free-form)
  std::vector<McpServerStatus> mcp_servers;  // optional: at most 32 (policy's bound)
  nlohmann::json to_json() const;
  static Result<WelcomeMsg> from_json(const nlohmann::json& m);
};

struct ResultMsg {
  static constexpr const char* kType = "result";
  std::string id;
  tools::ToolResult result;  // "isError", "content", "details"
  nlohmann::json to_json() const;
  static Result<ResultMsg> from_json(const nlohmann::json& m);
};

struct ProgressMsg {
  static constexpr const char* kType = "progress";
  std::string id;
  std::string chunk;
  // Null, or the call's decision once it is made, before the call runs (decision, rule,
  // decided_by: what the result's details will say), so a view shows it while it runs.
  nlohmann::json decided = nullptr;
  nlohmann::json to_json() const;
  static Result<ProgressMsg> from_json(const nlohmann::json& m);
};

struct AskMsg {  // on the console channel only
  static constexpr const char* kType = "ask";
  std::string id;   // the call
  std::string ask;  // the ask id the answer names
  std::string question;
  nlohmann::json rule;  // the deciding rule (policy's rule_json); null when absent
  nlohmann::json to_json() const;
  static Result<AskMsg> from_json(const nlohmann::json& m);
};

struct ErrorMsg {
  static constexpr const char* kType = "error";
  std::string message;            // encoded cut to kMaxErrorMessageBytes at a UTF-8 boundary
  std::string code = "protocol";  // protocol, workspace, policy, sandbox, audit, console, quota
  std::string id;                 // optional: the call it is about (cut to kMaxCallIdBytes)
  nlohmann::json to_json() const;
  static Result<ErrorMsg> from_json(const nlohmann::json& m);
};

// moatd's refusal of a hello of a version it does not speak (HelloStep::kVersion):
// "protocol version 3 is not supported (this moatd speaks 1 to 2)".
std::string version_refusal(std::int64_t asked);
// Whether `e`, the answer to a hello of kPipelinedExecVersion with an exec pipelined behind it,
// is a version-1 moatd's refusal of that (in its own words, kept here as it said them): of the
// hello's version, or of fds that came before its welcome. The client then says its hello
// again as version 1 and sends its exec after the welcome.
bool is_pipelining_refused(const ErrorMsg& e);

struct AttachedMsg {  // moatd's reply to an accepted console frame
  static constexpr const char* kType = "attached";
  std::string session;
  nlohmann::json to_json() const;
  static Result<AttachedMsg> from_json(const nlohmann::json& m);
};

// What each side may receive, in the order of the enums below (index() == enum value).
using ClientFrame =
    std::variant<HelloMsg, CallMsg, CancelMsg, AnswerMsg, ByeMsg, ConsoleMsg, ExecMsg>;
using ServerFrame =
    std::variant<WelcomeMsg, ResultMsg, ProgressMsg, AskMsg, ErrorMsg, ByeMsg, AttachedMsg,
                 McpStatusMsg>;

// Decodes a frame a client sent: a known type, every required field with the right JSON
// type, and every field moatd echoes (workspace, tool, id, ask, arguments.path,
// arguments.command) within its bound, as is an answer frame's payload_bytes. The error
// names the field and what was expected (never quoting its value).
Result<ClientFrame> decode_client_frame(const nlohmann::json& m, std::size_t payload_bytes = 0);
// The same for frames moatd sends (the client checks them too: it trusts nothing).
Result<ServerFrame> decode_server_frame(const nlohmann::json& m);

// The message types by name, for code that only needs to know which one arrived.
// kConsole opens a console connection (the person's channel: docs/protocol.md); kAttached
// is moatd's reply to it.
enum class ClientMessage { kHello, kCall, kCancel, kAnswer, kBye, kConsole, kExec };
enum class ServerMessage {
  kWelcome, kResult, kProgress, kAsk, kError, kBye, kAttached, kMcpStatus };

// decode_client_frame / decode_server_frame, keeping only the type.
Result<ClientMessage> validate_client_message(const nlohmann::json& m,
                                              std::size_t payload_bytes = 0);
Result<ServerMessage> validate_server_message(const nlohmann::json& m);

// Sends one message as a frame (send_frame): the writer both sides use for a blocking
// socket (moatd's per-client queue, sandbox/frame_writer.h, takes encoded frames).
template <typename Msg>
Result<void> send_message(int fd, const Msg& m) {
  return send_frame(fd, m.to_json());
}

// Reads frames from a stream socket: the reader both sides use (OpenSSH's
// mm_request_receive). Frames already in `decoder` (bytes read with an earlier frame)
// come first.
class FrameReader {
 public:
  explicit FrameReader(int fd, FrameDecoder decoder = {}) : fd_(fd), decoder_(std::move(decoder)) {}
  // The next whole frame, reading (blocking) as long as it takes; nullopt when the peer
  // closed the connection (or reading failed); an error when the stream is broken.
  Result<std::optional<nlohmann::json>> read();
  // One read(2) into the decoder, for a caller that polls: false at end of file or on an
  // error. next() then yields what arrived.
  bool fill();
  Result<std::optional<nlohmann::json>> next() { return decoder_.next(); }
  const FrameDecoder& decoder() const { return decoder_; }

 private:
  int fd_;
  FrameDecoder decoder_;
};

// The next frame from moatd, decoded (OpenSSH's mm_request_receive_expect, with the caller
// picking the expected alternative out of the variant): nullopt when moatd closed the
// connection, an error naming the problem when the stream or the frame is broken.
Result<std::optional<ServerFrame>> read_server_frame(FrameReader& reader);

// s cut to at most max bytes at a UTF-8 boundary, "..." appended when cut: how a reply or
// a record quotes a client's text without growing with it.
std::string cut_utf8(std::string s, std::size_t max);

// ErrorMsg{message, code, id}.to_json(): its message is cut to kMaxErrorMessageBytes (at a
// UTF-8 boundary), so that quoting a client's input can never make the reply exceed the
// frame limit.
nlohmann::json error_frame(std::string message, const std::string& code,
                           const std::string& id = "");

}  // namespace moat::sandbox
