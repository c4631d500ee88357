// agent/rpc_event_schema.cc: docs/events.md's event tables as data (rpc_event_schema.h).
#include "agent/rpc_event_schema.h"

#include <algorithm>

namespace moat::agent {
namespace {

using nlohmann::json;

constexpr unsigned S = kFieldString, I = kFieldInteger, N = kFieldNumber, B = kFieldBoolean,
                   O = kFieldObject, A = kFieldArray, Z = kFieldNull;
constexpr bool kAlways = true, kOptional = false;

// One row per row of the docs' tables, in their order.
constexpr EventField kFields[] = {
    {"session", "schema", I, kAlways},
    {"session", "id", S, kAlways},
    {"session", "moatd_session", S, kAlways},
    {"session", "workspace", S, kAlways},
    {"session", "model", S, kAlways},
    {"session", "provider", S, kAlways},
    {"session", "policy_layers", A, kAlways},
    {"session", "policy_hash", S, kAlways},
    {"session", "sandbox", O, kAlways},
    {"session", "tools", A, kAlways},
    {"session", "interactive", B, kAlways},
    {"session", "ephemeral", B, kAlways},
    {"session", "session_file", S | Z, kAlways},
    {"session", "audit_log", S | Z, kAlways},
    {"session", "mcp_servers", A, kOptional},
    {"mcp_status", "server", O, kAlways},
    {"turn_start", "turn", I, kAlways},
    {"text_delta", "text", S, kAlways},
    {"answer", "turn", I, kAlways},
    {"answer", "text", S, kAlways},
    {"answer", "tool_calls", I, kAlways},
    {"answer", "stop_reason", S, kAlways},
    {"answer", "usage", O, kAlways},
    {"answer", "cost", O, kAlways},
    {"answer", "totals", O, kAlways},
    {"cache_miss", "turn", I, kAlways},
    {"cache_miss", "missed_tokens", I, kAlways},
    {"cache_miss", "reason", S, kAlways},
    {"cache_miss", "cost", N, kAlways},
    {"tool_call_start", "id", S, kAlways},
    {"tool_call_start", "tool", S, kAlways},
    {"tool_call_start", "arguments", O, kAlways},
    {"tool_call_start", "summary", S, kAlways},
    {"tool_call_decision", "id", S, kAlways},
    {"tool_call_decision", "decision", S, kOptional},
    {"tool_call_decision", "rule", O, kOptional},
    {"tool_call_decision", "decided_by", S, kOptional},
    {"tool_output", "id", S, kAlways},
    {"tool_output", "chunk", S, kAlways},
    {"tool_call_end", "id", S, kAlways},
    {"tool_call_end", "tool", S, kAlways},
    {"tool_call_end", "is_error", B, kAlways},
    {"tool_call_end", "duration_ms", I, kAlways},
    {"tool_call_end", "output", S, kAlways},
    {"tool_call_end", "decision", S, kOptional},
    {"tool_call_end", "rule", O, kOptional},
    {"tool_call_end", "decided_by", S, kOptional},
    {"tool_call_end", "exit_code", I | Z, kOptional},
    {"tool_call_end", "signal", I | Z, kOptional},
    {"tool_call_end", "files_changed", A | Z, kOptional},
    {"tool_call_end", "timedOut", B, kOptional},
    {"tool_call_end", "fullOutputPath", S, kOptional},
    {"tool_call_end", "diff", S, kOptional},
    {"turn_end", "turn", I, kAlways},
    {"note", "message", S, kAlways},
    {"gate", "reason", S, kAlways},
    {"retry", "attempt", I, kAlways},
    {"retry", "delay_ms", I, kAlways},
    {"retry", "reason", S, kAlways},
    {"error", "during", S, kAlways},
    {"error", "message", S, kAlways},
    {"error", "schema", I, kOptional},
    {"result", "stop", S, kAlways},
    {"result", "detail", S, kAlways},
    {"result", "exit_code", I, kAlways},
    {"result", "turns", I, kOptional},
    {"result", "total_tokens", I, kOptional},
    {"result", "answer", S | Z, kOptional},
    {"result", "totals", O, kOptional},
    {"result", "session_file", S | Z, kOptional},
    {"result", "audit_log", S | Z, kOptional},
    {"result", "host_executed", A, kOptional},
    {"result", "host_executed_unknown", S, kOptional},
    // RPC events.
    {"response", "id", S | I | Z, kAlways},
    {"response", "command", S | Z, kAlways},
    {"response", "line", I, kAlways},
    {"response", "success", B, kAlways},
    {"response", "error", S, kOptional},
    {"response", "state", O, kOptional},
    {"response", "tree", S, kOptional},
    {"response", "entry", S, kOptional},
    {"response", "tokens_before", I, kOptional},
    {"response", "tokens_after", I, kOptional},
    {"ask", "ask", S, kAlways},
    {"ask", "question", S, kAlways},
    {"ask", "choices", A, kAlways},
};

bool is_of(const json& v, unsigned types) {
  return ((types & kFieldString) && v.is_string()) ||
         ((types & kFieldInteger) && v.is_number_integer()) ||
         ((types & kFieldNumber) && v.is_number()) || ((types & kFieldBoolean) && v.is_boolean()) ||
         ((types & kFieldObject) && v.is_object()) || ((types & kFieldArray) && v.is_array()) ||
         ((types & kFieldNull) && v.is_null());
}

// A name from the loop, shown safely: JSON-quoted ASCII, cut.
std::string named(const std::string& name) {
  std::string q = json(name).dump(-1, ' ', true, json::error_handler_t::replace);
  return q.size() > 80 ? q.substr(0, 77) + "..." : q;
}

}  // namespace

std::span<const EventField> documented_event_fields() { return kFields; }

std::string event_problem(const json& e) {
  if (!e.is_object()) return "not a JSON object";
  auto t = e.find("type");
  if (t == e.end() || !t->is_string()) return "no string `type`";
  const std::string type = *t;
  auto rows = std::span<const EventField>(kFields);
  auto of_type = [&](const EventField& f) { return f.event == type; };
  if (std::none_of(rows.begin(), rows.end(), of_type))
    return "undocumented event type " + named(type);
  for (const auto& [key, value] : e.items()) {
    if (key == "type") continue;
    auto row = std::find_if(rows.begin(), rows.end(),
                            [&](const EventField& f) { return of_type(f) && f.field == key; });
    if (row == rows.end()) return type + ": undocumented field " + named(key);
    if (!is_of(value, row->types)) return type + "." + key + ": not of a documented type";
  }
  for (const EventField& f : rows)
    if (of_type(f) && f.always && !e.contains(std::string(f.field)))
      return type + ": missing " + std::string(f.field);
  return "";
}

}  // namespace moat::agent
