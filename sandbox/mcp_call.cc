// sandbox/mcp_call.cc: a call of an MCP server's tool through the call gate (CallGate::run_mcp):
// decided on "mcp:SERVER:TOOL" with its arguments, its decision written first, asked as any
// tool's, then made by the session's McpHost and recorded as an "mcp.call".
#include <chrono>
#include <cstdio>
#include <stop_token>

#include "base/ticks.h"
#include "sandbox/audit_records.h"
#include "sandbox/call_gate.h"
#include "sandbox/mcp_host.h"

namespace moat::sandbox {
namespace {

using nlohmann::json;
namespace mcp = tools::mcp;

// What a result held, for the record: "text", "image", "audio", "structured", joined by "+".
std::string result_kind(const mcp::CallOutcome& out) {
  std::string kinds;
  auto add = [&](const char* k) {
    if (kinds.find(k) == std::string::npos) kinds += (kinds.empty() ? "" : "+") + std::string(k);
  };
  for (const mcp::Content& c : out.content)
    add(c.kind == mcp::Content::Kind::kText    ? "text"
        : c.kind == mcp::Content::Kind::kImage ? "image"
                                               : "audio");
  if (!out.structured.is_null()) add("structured");
  return kinds.empty() ? "none" : kinds;
}

// "progress 3/10 message": the numbers in their shortest form (a server sends JSON numbers;
// std::to_string wrote 3.000000).
std::string progress_line(const mcp::Progress& p) {
  char n[64];
  std::snprintf(n, sizeof n, "%.15g", p.progress);
  std::string line = std::string("progress ") + n;
  if (p.total) {
    std::snprintf(n, sizeof n, "%.15g", *p.total);
    line += std::string("/") + n;
  }
  return line + (p.message.empty() ? "" : " " + p.message) + "\n";
}

// A server may send thousands of progress notifications a second (the client's bound is 2000
// messages/s): moatd forwards at most one per ticks::kProgressForward, and the one that says
// the work is done, so a flood costs the agent's connection and the model's view nothing.
class ProgressForward {
 public:
  bool take(const mcp::Progress& p) {
    const auto now = std::chrono::steady_clock::now();
    const bool done = p.total && p.progress >= *p.total;
    if (!done && forwarded_ && now - last_ < ticks::kProgressForward) return false;
    forwarded_ = true;
    last_ = now;
    return true;
  }

 private:
  bool forwarded_ = false;
  std::chrono::steady_clock::time_point last_;
};

}  // namespace

tools::ToolResult CallGate::run_mcp(const GateCall& call, const mcp::ToolRef& ref) {
  std::set<std::string> approved;
  json facts = json::object();
  auto decision_id = admit(call, &approved, &facts);
  if (!decision_id) {
    tools::ToolResult refused = tools::ToolResult::error(decision_id.error().message());
    refused.details = std::move(facts);
    return refused;
  }
  if (call.decided) call.decided(facts);
  audit::McpCall rec;
  rec.decision_id = *decision_id;
  rec.call_id = call.id;
  rec.tool = call.tool;
  rec.server = ref.server;
  rec.server_tool = ref.tool;
  rec.set_args(call.args);
  const auto t0 = std::chrono::steady_clock::now();
  // RunningCalls raises the call's cancel (CallCancel::raise), which stops this token at once.
  const std::stop_token cancel = call.cancel ? call.cancel->token() : std::stop_token();
  ProgressForward forward;  // the client's reader thread calls `progress`, one at a time
  auto progress = [&call, &forward](const mcp::Progress& p) {
    if (call.progress && forward.take(p)) call.progress(progress_line(p));
  };
  auto outcome = session_.mcp ? session_.mcp->call(ref, call.args, cancel, progress)
                              : Result<mcp::CallOutcome>(fail("no MCP servers in this session"));
  rec.duration_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
          .count();
  tools::ToolResult result;
  if (outcome) {
    result = mcp::to_tool_result(*outcome);
    rec.result_bytes = outcome->bytes;
    rec.result_kind = result_kind(*outcome);
    rec.is_error = outcome->is_error;
  } else {
    result = tools::ToolResult::error(outcome.error().message());
    rec.result_kind = "none";
    rec.is_error = true;
    rec.error = outcome.error().message();
  }
  if (session_.call_ends->was_cancelled_by_person(call.id)) rec.cancelled = "person";
  (void)session_.record(std::string(audit::McpCall::kType), rec.to_json(),
                        sessions::AuditLog::Sync::kWithNext);
  if (!result.details.is_object()) result.details = json::object();
  result.details.update(facts);
  return result;
}

}  // namespace moat::sandbox
