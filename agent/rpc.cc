// agent/rpc.cc: `moat run --rpc` commands: framing, validation and responses (rpc.h).
#include "agent/rpc.h"

#include <array>

namespace moat::agent {
namespace {

using nlohmann::json;

// One row per command: its name and the fields it takes besides "type" and "id" (each a
// non-empty string), required then optional. docs/events.md documents the same table; the
// schema test compares them.
struct CommandRow {
  RpcKind kind;
  const char* name;
  std::vector<const char*> fields;
  std::vector<const char*> optional = {};
};

const std::array<CommandRow, 10>& command_table() {
  static const std::array<CommandRow, 10> rows = {{
      {RpcKind::kPrompt, "prompt", {"message"}},
      {RpcKind::kSteer, "steer", {"message"}},
      {RpcKind::kFollowUp, "follow_up", {"message"}},
      {RpcKind::kAbort, "abort", {}},
      {RpcKind::kAnswer, "answer", {"ask", "decision"}},
      {RpcKind::kGetState, "get_state", {}},
      {RpcKind::kSetModel, "set_model", {"model"}},
      {RpcKind::kGetTree, "get_tree", {}},
      {RpcKind::kFork, "fork", {}, {"entry"}},
      {RpcKind::kCompact, "compact", {}, {"instructions"}},
  }};
  return rows;
}

constexpr std::array<const char*, 3> kDecisions = {"allow_once", "allow_session", "deny"};

template <typename Names>
std::string listed(const Names& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + std::string(n);
  return out;
}

std::string command_names() {
  std::vector<const char*> names;
  for (const auto& r : command_table()) names.push_back(r.name);
  return listed(names);
}

std::string quoted_json(const json& v) {
  std::string s = v.dump(-1, ' ', true, json::error_handler_t::replace);
  return s.size() > 80 ? s.substr(0, 77) + "..." : s;
}

const CommandRow* row_named(const std::string& name) {
  for (const auto& r : command_table())
    if (name == r.name) return &r;
  return nullptr;
}

// Every field of `o` is the command's, of its type; every field it needs is there.
Result<void> check_fields(const CommandRow& row, const json& o) {
  std::vector<const char*> all = row.fields;
  all.insert(all.end(), row.optional.begin(), row.optional.end());
  const std::string takes =
      all.empty() ? "it takes only type and id" : "it takes type, id and " + listed(all);
  for (const auto& [key, value] : o.items()) {
    if (key == "type") continue;
    if (key == "id") {
      if (!value.is_string() && !value.is_number_integer())
        return fail("\"id\" is " + quoted_json(value) + ": a string or an integer is accepted");
      continue;
    }
    bool known = false;
    for (const char* f : all) known = known || key == f;
    if (!known) return fail("unknown field \"" + key + "\" in " + row.name + " (" + takes + ")");
    if (!value.is_string() || value.get<std::string>().empty())
      return fail(std::string(row.name) + "." + key + " is " + quoted_json(value) +
                  ": a non-empty string is accepted");
  }
  for (const char* f : row.fields)
    if (!o.contains(f)) return fail(std::string(row.name) + " needs \"" + f + "\" (" + takes + ")");
  return {};
}

Result<RpcCommand> command_of(const json& o) {
  if (!o.is_object())
    return fail("not a JSON object: " + quoted_json(o) + " (a command is {\"type\": ...})");
  auto type = o.find("type");
  if (type == o.end() || !type->is_string())
    return fail("no \"type\" string (accepted: " + command_names() + ")");
  const CommandRow* row = row_named(type->get<std::string>());
  if (row == nullptr)
    return fail("unknown command " + quoted_json(*type) + " (accepted: " + command_names() + ")");
  MOAT_TRY(check_fields(*row, o));
  RpcCommand c;
  c.kind = row->kind;
  c.id = o.value("id", json(nullptr));
  c.message = o.value("message", "");
  c.ask = o.value("ask", "");
  c.decision = o.value("decision", "");
  c.model = o.value("model", "");
  c.entry = o.value("entry", "");
  c.instructions = o.value("instructions", "");
  if (c.kind == RpcKind::kAnswer) {
    bool known = false;
    for (const char* d : kDecisions) known = known || c.decision == d;
    if (!known)
      return fail("answer.decision " + quoted_json(c.decision) +
                  " (accepted: " + listed(kDecisions) + ")");
  }
  return c;
}

}  // namespace

const char* rpc_command_name(RpcKind kind) {
  for (const auto& r : command_table())
    if (r.kind == kind) return r.name;
  return "?";
}

Result<RpcCommand> parse_rpc_command(std::string_view text, std::uint64_t line) {
  const std::string at = "line " + std::to_string(line) + ": ";
  const json o = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (o.is_discarded())
    return fail(at + "not JSON (one JSON object per LF-ended line, e.g. " +
                "{\"type\":\"prompt\",\"id\":1,\"message\":\"...\"})");
  auto c = command_of(o);
  if (!c) return fail(at + c.error().context);
  c->line = line;
  return c;
}

json rpc_response(const RpcCommand& c, const std::string& error) {
  json r = {{"type", "response"},
            {"id", c.id},
            {"command", rpc_command_name(c.kind)},
            {"line", c.line},
            {"success", error.empty()}};
  if (!error.empty()) r["error"] = error;
  return r;
}

json rpc_refusal(std::uint64_t line, const std::string& error) {
  return {{"type", "response"}, {"id", nullptr},    {"command", nullptr},
          {"line", line},       {"success", false}, {"error", error}};
}

json rpc_id_of(std::string_view text) {
  const json o = json::parse(text, nullptr, false);
  if (!o.is_object() || !o.contains("id")) return nullptr;
  const json& id = o["id"];
  return id.is_string() || id.is_number_integer() ? id : json(nullptr);
}

std::vector<RpcLines::Line> RpcLines::feed(std::string_view bytes) {
  std::vector<Line> out;
  while (!bytes.empty()) {
    const std::size_t nl = bytes.find('\n');
    const std::string_view piece = bytes.substr(0, nl);
    // Only what fits is held: the rest of an overlong line is dropped as it comes.
    const std::size_t room = kMaxRpcLine - partial_.size();
    partial_.append(piece.substr(0, room));
    if (piece.size() > room) overlong_ = true;
    if (nl == std::string_view::npos) break;
    out.push_back(Line{++number_, std::move(partial_), overlong_});
    partial_.clear();
    overlong_ = false;
    bytes.remove_prefix(nl + 1);
  }
  return out;
}

std::vector<RpcLines::Line> RpcLines::finish() {
  if (partial_.empty() && !overlong_) return {};
  std::vector<Line> out{Line{++number_, std::move(partial_), overlong_}};
  partial_.clear();
  overlong_ = false;
  return out;
}

}  // namespace moat::agent
