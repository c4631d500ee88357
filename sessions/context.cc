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

std::vector<Message> SessionContext::for_provider() const {
  std::vector<Message> out;
  out.reserve(messages.size() + 1);
  if (compactions > 0) out.push_back(summary_message(summary, read_files, modified_files));
  out.insert(out.end(), messages.begin(), messages.end());
  return out;
}

SessionContext build_context(const std::vector<Entry>& path) {
  SessionContext ctx;
  size_t start = 0;
  for (size_t i = path.size(); i-- > 0;) {
    if (str_field(path[i], "type") != "compaction") continue;
    const Entry& c = path[i];
    ctx.summary = str_field(c, "summary");
    ctx.read_files = string_list(c, "readFiles");
    ctx.modified_files = string_list(c, "modifiedFiles");
    if (c.contains("retained") && c["retained"].is_array())
      ctx.messages.assign(c["retained"].begin(), c["retained"].end());
    start = i + 1;
    break;
  }
  for (size_t i = 0; i < path.size(); ++i) {
    const std::string type = str_field(path[i], "type");
    if (type == "compaction") ++ctx.compactions;
    if (type == "model_change") {
      ctx.provider = str_field(path[i], "provider");
      ctx.model = str_field(path[i], "model");
    }
    if (i < start) continue;
    if (type == "message" && path[i].contains("message")) {
      ctx.messages.push_back(path[i]["message"]);
    } else if (type == "branch_summary") {
      ctx.messages.push_back(user_text(
          "The following summarises a branch of this conversation that was left:\n\n<summary>\n" +
          str_field(path[i], "summary") + "\n</summary>"));
    }
  }
  return ctx;
}

std::vector<DanglingCall> dangling_tool_calls(const std::vector<Entry>& path) {
  const SessionContext ctx = build_context(path);
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

Message interrupted_result(const DanglingCall& call) {
  return {{"role", "toolResult"},
          {"toolCallId", call.id},
          {"toolName", call.name},
          {"isError", true},
          {"content",
           {{{"type", "text"},
             {"text", "The tool call was interrupted (moat stopped before it finished), so its "
                      "outcome is unknown. Check the state before repeating it."}}}}};
}

}  // namespace moat::sessions
