// sessions/context.cc: rebuilding the model's context from a root-to-leaf path.
#include "sessions/context.h"

#include <unordered_set>

#include "sessions/json_util.h"

namespace moat::sessions {
namespace {

Message user_text(std::string text) {
  return {{"role", "user"}, {"content", {{{"type", "text"}, {"text", std::move(text)}}}}};
}

void append_list(const char* tag, const std::vector<std::string>& files, std::string* out) {
  if (files.empty()) return;
  *out += std::string("\n\n<") + tag + ">\n";
  for (const auto& f : files) *out += f + "\n";
  *out += std::string("</") + tag + ">";
}

std::vector<std::string> string_list(const Entry& e, const char* key) {
  std::vector<std::string> out;
  if (!e.contains(key) || !e[key].is_array()) return out;
  for (const auto& v : e[key])
    if (v.is_string()) out.push_back(v.get<std::string>());
  return out;
}

}  // namespace

Message summary_message(const std::string& summary, const std::vector<std::string>& read_files,
                        const std::vector<std::string>& modified_files) {
  std::string text =
      "The conversation before this point was compacted into the summary below.\n\n<summary>\n" +
      summary + "\n</summary>";
  append_list("read-files", read_files, &text);
  append_list("modified-files", modified_files, &text);
  return user_text(std::move(text));
}

std::vector<Message> SessionContext::live_messages() const {
  return std::vector<Message>(messages.begin() + static_cast<std::ptrdiff_t>(live_begin),
                              messages.end());
}

SessionContext build_context(const std::vector<const Entry*>& path) {
  SessionContext ctx;
  size_t start = 0;
  for (size_t i = path.size(); i-- > 0;) {
    const Entry& c = *path[i];
    if (str_field(c, "type") != "compaction") continue;
    ctx.summary = str_field(c, "summary");
    ctx.read_files = string_list(c, "readFiles");
    ctx.modified_files = string_list(c, "modifiedFiles");
    ctx.messages.push_back(summary_message(ctx.summary, ctx.read_files, ctx.modified_files));
    ctx.live_begin = 1;
    if (c.contains("retained") && c["retained"].is_array())
      ctx.messages.insert(ctx.messages.end(), c["retained"].begin(), c["retained"].end());
    start = i + 1;
    break;
  }
  ctx.messages.reserve(ctx.messages.size() + path.size() - start);
  for (size_t i = 0; i < path.size(); ++i) {
    const Entry& e = *path[i];
    const std::string type = str_field(e, "type");
    if (type == "compaction") ++ctx.compactions;
    if (type == "model_change") {
      ctx.provider = str_field(e, "provider");
      ctx.model = str_field(e, "model");
    }
    if (i < start) continue;
    if (type == "message") {
      if (auto m = e.find("message"); m != e.end()) ctx.messages.push_back(*m);
    } else if (type == "branch_summary") {
      ctx.messages.push_back(user_text(
          "The following summarises a branch of this conversation that was left:\n\n<summary>\n" +
          str_field(e, "summary") + "\n</summary>"));
    }
  }
  return ctx;
}

SessionContext build_context(const std::vector<Entry>& path) {
  std::vector<const Entry*> refs;
  refs.reserve(path.size());
  for (const Entry& e : path) refs.push_back(&e);
  return build_context(refs);
}

SessionContext build_context(const SessionStore& store) {
  SessionContext ctx = build_context(store.path_refs(store.leaf()));
  ctx.workspace = str_field(store.header(), "workspace");
  return ctx;
}

namespace {

std::vector<DanglingCall> unanswered(const SessionContext& ctx) {
  std::vector<DanglingCall> calls;
  std::unordered_set<std::string> answered;
  for (const Message& m : ctx.messages) {
    const std::string role = str_field(m, "role");
    if (role == "toolResult") answered.insert(str_field(m, "toolCallId"));
    if (role != "assistant" || !m.contains("content") || !m["content"].is_array()) continue;
    for (const auto& block : m["content"])
      if (str_field(block, "type") == "toolCall")
        calls.push_back(DanglingCall{str_field(block, "id"), str_field(block, "name")});
  }
  std::vector<DanglingCall> out;
  for (auto& c : calls)
    if (answered.count(c.id) == 0) out.push_back(std::move(c));
  return out;
}

}  // namespace

std::vector<DanglingCall> dangling_tool_calls(const std::vector<Entry>& path) {
  return unanswered(build_context(path));
}

std::vector<DanglingCall> dangling_tool_calls(const SessionStore& store) {
  return unanswered(build_context(store));
}

Message interrupted_result(const DanglingCall& call, Unanswered why) {
  const char* text =
      why == Unanswered::kInterrupted
          ? "The tool call was interrupted (moat stopped before it finished), so its "
            "outcome is unknown. Check the state before repeating it."
          : "This conversation continues from a point before this tool call's result, so "
            "the result is not part of it. Check the state before relying on the call or "
            "repeating it.";
  return {{"role", "toolResult"},
          {"toolCallId", call.id},
          {"toolName", call.name},
          {"isError", true},
          {"content", {{{"type", "text"}, {"text", text}}}}};
}

Result<size_t> answer_dangling_calls(SessionStore& store, Unanswered why) {
  const std::vector<DanglingCall> calls = dangling_tool_calls(store);
  for (const DanglingCall& c : calls)
    MOAT_TRY(store.append({{"type", "message"}, {"message", interrupted_result(c, why)}}));
  if (!calls.empty()) MOAT_TRY(store.sync());
  return calls.size();
}

}  // namespace moat::sessions
