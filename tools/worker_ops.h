// tools/worker_ops.h: the contract between moatd and the sandbox worker that runs a file tool's
// operation (tools/registry.cc: resolve_target and run_operation on moatd's side,
// handle_in_sandbox in the worker). One struct per message, one encoder and one decoder each; a
// decoder's error names the field and never echoes its value (the sandbox/protocol.h
// discipline). Every message is one JSON object; its bytes cross as they are
// (base/byte_strings.h): a canonical path that is not UTF-8 is judged by moatd and then acted
// on by the worker, so a U+FFFD in its place would make the path judged differ from the one used.
//
//   ResolveRequest  {"op":"resolve","path","cwd","which":[program names]}
//   ResolveReply    {"path","exists","isDir","program"}, or {"error"}
//   OpRequest       {"op":<the tool's name>,"path":<canonical path>,"args":{...}}
//   OpReply         a ToolResult ({"isError","content","details"}), or {"error"}
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "base/result.h"
#include "tools/tool.h"

namespace moat::tools {

// Where a path leads inside the sandbox, from the workspace `cwd`; `which`: the external back
// ends to look for there (rg, fdfind), the first present one named in the reply.
struct ResolveRequest {
  std::string path;
  std::string cwd;
  std::vector<std::string> which;
};
// The tool `op`'s operation (its row's FileOp::op) on the canonical `path` with `args`.
struct OpRequest {
  std::string op;
  std::string path;
  nlohmann::json args = nlohmann::json::object();
};
using WorkerRequest = std::variant<ResolveRequest, OpRequest>;

// `error` is the worker's own failure ("" when it answered); the other fields are then unset.
struct ResolveReply {
  std::string error = {};
  std::string path = {};
  bool exists = false;
  bool is_dir = false;
  std::string program = {};  // "" when none of `which` is present
};
struct OpReply {
  std::string error = {};
  ToolResult result = {};
};

std::string encode(const ResolveRequest& m);
std::string encode(const OpRequest& m);
// "worker request: \"op\" is not a string" and the like; a request with an op that is no tool
// decodes (the handler answers it with an error naming the op).
Result<WorkerRequest> decode_worker_request(std::string_view bytes);

std::string encode(const ResolveReply& m);
std::string encode(const OpReply& m);
// "the sandbox worker returned malformed JSON", or the field that is missing or of another type.
Result<ResolveReply> decode_resolve_reply(std::string_view bytes);
Result<OpReply> decode_op_reply(std::string_view bytes);

}  // namespace moat::tools
