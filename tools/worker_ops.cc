// tools/worker_ops.cc: the worker's operations to and from their JSON objects.
#include "tools/worker_ops.h"

#include <optional>
#include <utility>

#include "base/byte_strings.h"

namespace moat::tools {
namespace {

using nlohmann::json;

constexpr const char* kResolveOp = "resolve";

Result<json> parse_object(std::string_view bytes, const char* what) {
  json j = json::parse(bytes, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return fail(std::string(what));
  return decode_byte_strings(std::move(j));
}

Error bad_field(const char* message, const char* field, const char* type) {
  return Error{0, std::string(message) + ": \"" + field + "\" is missing or not " + type};
}

Result<std::string> string_field(const json& j, const char* message, const char* field) {
  auto it = j.find(field);
  if (it == j.end() || !it->is_string()) return fail(bad_field(message, field, "a string"));
  return it->get<std::string>();
}

Result<bool> bool_field(const json& j, const char* message, const char* field) {
  auto it = j.find(field);
  if (it == j.end() || !it->is_boolean()) return fail(bad_field(message, field, "a boolean"));
  return it->get<bool>();
}

Result<std::vector<std::string>> names_field(const json& j, const char* message,
                                             const char* field) {
  auto it = j.find(field);
  if (it == j.end() || !it->is_array()) return fail(bad_field(message, field, "an array"));
  std::vector<std::string> names;
  for (const json& n : *it) {
    if (!n.is_string()) return fail(bad_field(message, field, "an array of strings"));
    names.push_back(n.get<std::string>());
  }
  return names;
}

// The worker's failure, when the reply is one.
std::optional<std::string> worker_error(const json& j) {
  auto it = j.find("error");
  if (it == j.end()) return std::nullopt;
  return it->is_string() ? it->get<std::string>() : it->dump();
}

constexpr const char* kRequest = "worker request";
constexpr const char* kReply = "the sandbox worker's reply";

Result<WorkerRequest> decode_resolve(const json& j) {
  ResolveRequest m;
  MOAT_ASSIGN_OR_RETURN(m.path, string_field(j, kRequest, "path"));
  MOAT_ASSIGN_OR_RETURN(m.cwd, string_field(j, kRequest, "cwd"));
  MOAT_ASSIGN_OR_RETURN(m.which, names_field(j, kRequest, "which"));
  return WorkerRequest{std::move(m)};
}

Result<WorkerRequest> decode_op(const json& j, std::string op) {
  OpRequest m{std::move(op), "", json::object()};
  MOAT_ASSIGN_OR_RETURN(m.path, string_field(j, kRequest, "path"));
  auto args = j.find("args");
  if (args == j.end() || !args->is_object()) return fail(bad_field(kRequest, "args", "an object"));
  m.args = *args;
  return WorkerRequest{std::move(m)};
}

}  // namespace

std::string encode(const ResolveRequest& m) {
  return dump_lossless({{"op", kResolveOp}, {"path", m.path}, {"cwd", m.cwd}, {"which", m.which}});
}

std::string encode(const OpRequest& m) {
  return dump_lossless({{"op", m.op}, {"path", m.path}, {"args", m.args}});
}

Result<WorkerRequest> decode_worker_request(std::string_view bytes) {
  MOAT_ASSIGN_OR_RETURN(json j, parse_object(bytes, "malformed request"));
  MOAT_ASSIGN_OR_RETURN(std::string op, string_field(j, kRequest, "op"));
  if (op == kResolveOp) return decode_resolve(j);
  return decode_op(j, std::move(op));
}

std::string encode(const ResolveReply& m) {
  if (!m.error.empty()) return dump_lossless({{"error", m.error}});
  return dump_lossless(
      {{"path", m.path}, {"exists", m.exists}, {"isDir", m.is_dir}, {"program", m.program}});
}

std::string encode(const OpReply& m) {
  if (!m.error.empty()) return dump_lossless({{"error", m.error}});
  return dump_lossless(m.result.to_json());
}

Result<ResolveReply> decode_resolve_reply(std::string_view bytes) {
  MOAT_ASSIGN_OR_RETURN(json j, parse_object(bytes, "the sandbox worker returned malformed JSON"));
  ResolveReply m;
  if (auto e = worker_error(j)) {
    m.error = *e;
    return m;
  }
  MOAT_ASSIGN_OR_RETURN(m.path, string_field(j, kReply, "path"));
  MOAT_ASSIGN_OR_RETURN(m.exists, bool_field(j, kReply, "exists"));
  MOAT_ASSIGN_OR_RETURN(m.is_dir, bool_field(j, kReply, "isDir"));
  MOAT_ASSIGN_OR_RETURN(m.program, string_field(j, kReply, "program"));
  return m;
}

Result<OpReply> decode_op_reply(std::string_view bytes) {
  MOAT_ASSIGN_OR_RETURN(json j, parse_object(bytes, "the sandbox worker returned malformed JSON"));
  OpReply m;
  if (auto e = worker_error(j)) {
    m.error = *e;
    return m;
  }
  m.result = ToolResult::from_json(j);
  return m;
}

}  // namespace moat::tools
