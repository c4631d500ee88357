// tools/mcp_client.h: a Model Context Protocol client over a message transport: a stdio pair
// of fds (JSON-RPC 2.0, one message per line; stdio_transport below) or HTTP (tools/mcp_http.h,
// Streamable HTTP and the older HTTP+SSE). The lifecycle, tools/list and tools/call, progress,
// cancellation, ping, timeouts, and the bounds that keep a hostile server (untrusted code) from
// costing us more than they allow. It starts and ends no process: the caller (moatd's host, a test)
// owns the server's process and hands its pipes (or the HTTP transport its connection).
//
// Protocol revisions: the session-based lifecycle (initialize, initialized) of
// 2025-11-25, negotiated down to 2025-06-18, 2025-03-26 and 2024-11-05 (kProtocolVersions).
// Not yet: the stateless 2026-07-28 revision (server/discover, per-request _meta), resources,
// prompts, and the server-to-client features (sampling, roots, elicitation, which we do not
// declare; a server's request for one is answered with a JSON-RPC error).
#pragma once

#include <nlohmann/json.hpp>

#include <array>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"
#include "tools/tool.h"

namespace moat::tools::mcp {

// The revisions we speak, newest first: we offer the first; a server answering another of
// these is accepted, any other version ends the start with an error naming both.
inline constexpr std::array<std::string_view, 4> kProtocolVersions = {
    "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"};

// Every bound on what a server may send, with its reason. A server breaking one gets an
// error naming it and the bound; a frame, depth or rate breach ends the connection (the
// stream can no longer be trusted to be in step), a result or list breach fails that request.
struct ServerLimits {
  // One JSON-RPC message (one line). Above this the connection ends: we never buffer more.
  std::size_t max_frame_bytes = 8u << 20;
  // A tools/call result (its JSON bytes): what may reach the model and the audit log.
  std::size_t max_result_bytes = 4u << 20;
  // The tools one server may offer (summed over tools/list pages): each costs model context.
  std::size_t max_tools = 256;
  // A tool's description (and title), cut at a UTF-8 boundary: untrusted text the model reads.
  std::size_t max_description_bytes = 4096;
  // A tool's inputSchema as JSON text: it goes to the model with every request. A tool over
  // it is dropped (logged), as one without a name is.
  std::size_t max_schema_bytes = 64u << 10;
  // JSON nesting depth, checked on the raw bytes before parsing (nlohmann parses recursively,
  // so a 64k-deep array would exhaust the stack).
  std::size_t max_depth = 64;
  // Each request's wait for its response (initialize included), unless cancelled first.
  std::chrono::milliseconds request_timeout{60000};
  // Messages a server may send per second (a flood of notifications is a denial of service).
  std::size_t max_messages_per_second = 2000;
};

struct ToolAnnotations {  // hints only: a server is untrusted (spec: "Tools > Annotations")
  std::optional<bool> read_only;    // readOnlyHint
  std::optional<bool> destructive;  // destructiveHint
  std::optional<bool> idempotent;   // idempotentHint
  std::optional<bool> open_world;   // openWorldHint
};

struct ToolInfo {
  std::string name;         // as the server names it (mcp_names.h makes the model's name)
  std::string title;        // cut to max_description_bytes, control bytes written as \xNN
  std::string description;  // the same
  nlohmann::json input_schema = nlohmann::json::object();  // always a JSON object
  nlohmann::json output_schema;                            // null when none
  ToolAnnotations annotations;
};

// One block of a tool result. Resource links and embedded text resources arrive as kText
// (their uri and text); an embedded binary resource as its uri only.
struct Content {
  enum class Kind { kText, kImage, kAudio };
  Kind kind = Kind::kText;
  std::string text;       // kText
  std::string mime_type;  // kImage, kAudio
  std::string data;       // kImage, kAudio: base64, as the server sent it
};

struct CallOutcome {
  bool is_error = false;          // the tool's own failure (isError), not a protocol error
  std::vector<Content> content;
  nlohmann::json structured;      // structuredContent, null when none
  std::size_t bytes = 0;          // the result's JSON bytes (the frame's line)
};

// tools/call's content in the shape every tool result has (tool.h): text and image blocks;
// audio as a text line naming it; structured content as a text block when no text came. An
// image is passed only when its base64 is canonical, its bytes PNG, JPEG, GIF or WebP (the
// type sniffed from them, not the server's) and at most kMaxImageBytes (tools/truncate.h);
// otherwise a text line names its type, size and why it is not shown.
ToolResult to_tool_result(const CallOutcome& outcome);

struct Progress {  // notifications/progress for a request
  double progress = 0;
  std::optional<double> total;
  std::string message;  // control bytes written as \xNN
};

struct ServerInfo {  // what initialize told us
  std::string protocol_version;  // the negotiated one: one of kProtocolVersions
  std::string name;              // serverInfo.name
  std::string version;           // serverInfo.version
  std::string instructions;      // cut to max_description_bytes
  bool tools_list_changed = false;  // capabilities.tools.listChanged
};

// How messages travel between the client and one server: one JSON-RPC message (its JSON text,
// no newline) at a time each way. The client checks every received message against its
// ServerLimits (size, rate, depth) before parsing; a transport bounds what it buffers before it
// has a whole message (max_frame_bytes) and names the server in each error it returns.
class Transport {
 public:
  using Clock = std::chrono::steady_clock;
  // Takes one received message; an error ends the connection with it.
  using Deliver = std::function<std::optional<Error>(std::string_view message)>;
  virtual ~Transport() = default;
  // Sends one message before `deadline`. Thread-safe, and callable from the reader thread
  // (the client answers a server's ping there) without waiting for that thread.
  virtual Result<void> send(std::string_view message, Clock::time_point deadline) = 0;
  // The client's one reader thread: delivers each message in order until close() (returns
  // nullopt) or the connection ends (returns why: EOF, a bound, a lost session).
  virtual std::optional<Error> receive(const Deliver& deliver) = 0;
  // After initialize: the negotiated revision (HTTP sends it in MCP-Protocol-Version).
  virtual void negotiated(const std::string& /*protocol_version*/) {}
  // Ends the connection (stdio: closes the server's stdin, the spec's shutdown; HTTP: DELETE
  // of its session) and makes receive() return. Idempotent; the client then joins its reader.
  virtual void close() = 0;
};

// The stdio transport: newline-delimited messages on the server's stdin and stdout.
Result<std::unique_ptr<Transport>> stdio_transport(const std::string& server, UniqueFd to_server,
                                                   UniqueFd from_server,
                                                   const ServerLimits& limits);

// One connection. One reader thread per client reads the server's lines, answers its
// requests and hands each response to its waiting caller; requests may be made from several
// threads at once. Every error's text starts with "mcp server NAME: ".
class Client {
 public:
  // Sends initialize, waits for the answer (request_timeout or `stop`), checks the version,
  // sends notifications/initialized. `server` names the server in every error. A version we
  // do not speak, or an error answer to initialize (a server speaking only 2026-07-28), fails
  // with an error naming kProtocolVersions.
  static Result<std::unique_ptr<Client>> start(std::string server, UniqueFd to_server,
                                               UniqueFd from_server, ServerLimits limits,
                                               std::stop_token stop);
  // The same over any transport (tools/mcp_http.h's, a stdio_transport).
  static Result<std::unique_ptr<Client>> start(std::string server,
                                               std::unique_ptr<Transport> transport,
                                               ServerLimits limits, std::stop_token stop);
  ~Client();  // close()
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Every tool, following nextCursor through the pages; clears tools_changed() first. A
  // tool with no name or a schema that is not an object, or one whose inputSchema is over
  // max_schema_bytes, is dropped (logged, and named in skipped_tools()); more than max_tools
  // fails the call.
  Result<std::vector<ToolInfo>> list_tools(std::stop_token stop);
  // What the last list_tools dropped, one entry per tool: its name (escaped, cut) and why.
  const std::vector<std::string>& skipped_tools() const;
  // tools/call. on_progress (optional) is called on the reader thread for each
  // notifications/progress of this call: keep it short. A stop sends notifications/cancelled
  // and returns an error at once; so does a timeout.
  Result<CallOutcome> call_tool(const std::string& name, const nlohmann::json& arguments,
                                std::stop_token stop,
                                std::function<void(const Progress&)> on_progress = {});
  Result<void> ping(std::stop_token stop);

  // True once the server sent notifications/tools/list_changed since the last list_tools.
  bool tools_changed() const;
  // The error that ended the connection (EOF, a bound, a write failure), or nullopt while up.
  std::optional<Error> ended() const;
  const ServerInfo& info() const;
  const std::string& server() const;

  // Closes the transport (stdio: our end of the server's stdin, where the spec's shutdown
  // starts; HTTP: DELETE of the session) and joins the reader. Pending requests fail.
  // Idempotent. Ending the process is the caller's.
  void close();

  struct State;  // the reader's and the callers' shared state (mcp_client.cc)

 private:
  explicit Client(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace moat::tools::mcp
