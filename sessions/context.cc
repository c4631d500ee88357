// sessions/context.cc: rebuilding the model's context from a root-to-leaf path.
#include "sessions/context.h"

#include <string_view>

#include <absl/container/flat_hash_set.h>

#include "sessions/json_util.h"
#include "sessions/message_dom.h"

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

namespace {

std::string_view type_of(const Entry& e) {
  auto it = e.find("type");
  if (it == e.end() || !it->is_string()) return {};
  return it->get_ref<const std::string&>();
}

// A root-to-leaf path as the walk below reads it: entry k's type, and entry k itself, read
// only where its contents are needed.
struct RefPath {
  const std::vector<const Entry*>& entries;
  size_t size() const { return entries.size(); }
  std::string_view type(size_t k) const { return type_of(*entries[k]); }
  const Entry& entry(size_t k) const { return *entries[k]; }
  void push_message(size_t k, MessageList& out) const {
    if (auto m = entries[k]->find("message"); m != entries[k]->end()) out.push_ref(*m);
  }
};

// A store's entries are parsed when read, so only the ones the context reads are: its
// messages are referred to by index and stay bytes (a request is made from the bytes).
struct StorePath {
  const SessionStore& store;
  std::vector<size_t> indices;
  size_t size() const { return indices.size(); }
  std::string_view type(size_t k) const { return store.entry_type(indices[k]); }
  const Entry& entry(size_t k) const { return store.entry(indices[k]); }
  void push_message(size_t k, MessageList& out) const {
    if (store.entry_has_message(indices[k])) out.push_entry(store, indices[k]);
  }
};

// The newest compaction on the path stands in for everything before it: its summary and
// its copy of the retained tail open the context. Returns where the live entries start.
template <typename Path>
size_t open_with_compaction(const Path& path, SessionContext& ctx) {
  for (size_t i = path.size(); i-- > 0;) {
    if (path.type(i) != "compaction") continue;
    const Entry& c = path.entry(i);
    ctx.summary = str_field(c, "summary");
    ctx.read_files = string_list(c, "readFiles");
    ctx.modified_files = string_list(c, "modifiedFiles");
    ctx.messages.push_back(summary_message(ctx.summary, ctx.read_files, ctx.modified_files));
    ctx.live_begin = 1;
    if (auto retained = c.find("retained"); retained != c.end() && retained->is_array())
      for (const Message& m : *retained) ctx.messages.push_ref(m);
    return i + 1;
  }
  return 0;
}

template <typename Path>
SessionContext walk(const Path& path) {
  SessionContext ctx;
  const size_t start = open_with_compaction(path, ctx);
  ctx.messages.reserve(ctx.messages.size() + path.size() - start);
  for (size_t i = 0; i < path.size(); ++i) {
    const std::string_view type = path.type(i);
    if (type == "compaction") ++ctx.compactions;
    if (type == "model_change") {
      ctx.provider = str_field(path.entry(i), "provider");
      ctx.model = str_field(path.entry(i), "model");
    }
    if (i < start) continue;
    if (type == "message") {
      path.push_message(i, ctx.messages);
    } else if (type == "branch_summary") {
      ctx.messages.push_back(user_text(
          "The following summarises a branch of this conversation that was left:\n\n<summary>\n" +
          str_field(path.entry(i), "summary") + "\n</summary>"));
    }
  }
  return ctx;
}

std::vector<const Entry*> refs_of(const std::vector<Entry>& path) {
  std::vector<const Entry*> refs;
  refs.reserve(path.size());
  for (const Entry& e : path) refs.push_back(&e);
  return refs;
}

}  // namespace

SessionContext build_context(const std::vector<const Entry*>& path) { return walk(RefPath{path}); }

SessionContext build_context(const std::vector<Entry>& path) {
  SessionContext ctx = build_context(refs_of(path));
  ctx.messages = ctx.messages.to_vector();  // owned: `path` may be a temporary
  return ctx;
}

SessionContext build_context(const SessionStore& store) {
  SessionContext ctx = walk(StorePath{store, store.path_indices(store.leaf())});
  ctx.workspace = str_field(store.header(), "workspace");
  return ctx;
}

namespace {

// A store's message is known from what the open's scan (or the append) took of it: a
// resume checks every message of the session, and reading each again cost as much as the
// rest of the resume. Other messages (a compaction's retained tail) are read here.
std::vector<DanglingCall> unanswered(const SessionContext& ctx) {
  std::vector<DanglingCall> calls;
  absl::flat_hash_set<std::string> answered;
  auto take = [&](const ToolCallRole* role) {
    if (role == nullptr) return;
    if (role->answers) answered.insert(*role->answers);
    for (const auto& [id, name] : role->calls) calls.push_back(DanglingCall{id, name});
  };
  MessageReader reader;
  for (size_t i = 0; i < ctx.messages.size(); ++i) {
    const MessageList::Item& item = ctx.messages.item(i);
    if (item.store != nullptr) take(item.store->entry_tool_calls(item.entry));
    else reader.read(item, [&](JsonElement m) { take(tool_call_role(m).get()); });
  }
  std::vector<DanglingCall> out;
  for (auto& c : calls)
    if (!answered.contains(c.id)) out.push_back(std::move(c));
  return out;
}

}  // namespace

std::vector<DanglingCall> dangling_tool_calls(const std::vector<Entry>& path) {
  return unanswered(build_context(refs_of(path)));
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
