// sessions/render_session.cc: text and HTML views of a session.
#include "sessions/render_session.h"

#include <cstdio>
#include <map>
#include <unordered_map>

#include "base/utf8.h"
#include "sessions/json_util.h"

namespace moat::sessions {
namespace {

// Untrusted text on a terminal: no escapes that move the cursor or forge lines.
std::string one_line(std::string_view text, size_t width) {
  std::string out;
  for (unsigned char c : text) {
    if (out.size() >= width) {
      out += "...";
      break;
    }
    if (c == '\n' || c == '\t') out += ' ';
    else if (c < 0x20 || c == 0x7f) append_hex_escape(out, c);
    else out += static_cast<char>(c);
  }
  return out;
}

std::string blocks_text(const Entry& message, const char* type, const char* field) {
  std::string out;
  if (!message.contains("content")) return out;
  const auto& c = message["content"];
  if (c.is_string()) return std::string(type) == "text" ? c.get<std::string>() : "";
  if (!c.is_array()) return out;
  for (const auto& b : c)
    if (str_field(b, "type") == type) out += str_field(b, field);
  return out;
}

std::string tool_calls(const Entry& message) {
  std::string out;
  if (!message.contains("content") || !message["content"].is_array()) return out;
  for (const auto& b : message["content"]) {
    if (str_field(b, "type") != "toolCall") continue;
    if (!out.empty()) out += ", ";
    std::string arg = b.contains("arguments") ? str_field(b["arguments"], "path") : "";
    if (arg.empty() && b.contains("arguments")) arg = str_field(b["arguments"], "command");
    out += str_field(b, "name") + "(" + arg + ")";
  }
  return out;
}

bool is_error_result(const Entry& m) {
  return m.contains("isError") && m["isError"].is_boolean() && m["isError"].get<bool>();
}

std::string message_summary(const Entry& m, size_t width) {
  const std::string role = str_field(m, "role");
  if (role == "toolResult")
    return "result " + str_field(m, "toolName") + (is_error_result(m) ? " (error)" : "") + ": " +
           one_line(blocks_text(m, "text", "text"), width);
  std::string text = blocks_text(m, "text", "text");
  if (role == "assistant") {
    const std::string calls = tool_calls(m);
    if (!calls.empty()) text += (text.empty() ? "" : " ") + std::string("-> ") + calls;
  }
  return role + ": " + one_line(text, width);
}

}  // namespace

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string entry_summary(const Entry& e, size_t width) {
  const std::string type = str_field(e, "type");
  if (type == "message" && e.contains("message")) return message_summary(e["message"], width);
  if (type == "model_change")
    return "model: " + one_line(str_field(e, "provider") + "/" + str_field(e, "model"), width);
  if (type == "tools_change")
    return "tools changed: " + one_line(e.contains("tools") ? dump_json(e["tools"]) : "", width);
  if (type == "compaction")
    return "compaction: " + std::to_string(int_field(e, "tokensBefore")) + " tokens summarised";
  if (type == "branch_summary")
    return "branch summary: " + one_line(str_field(e, "summary"), width);
  if (type == "label")
    return "label " + one_line(str_field(e, "label"), width) + " -> " + str_field(e, "targetId");
  if (type == "session_info") return "name: " + one_line(str_field(e, "name"), width);
  return one_line(type, width);
}

std::string render_tree(const SessionStore& store) {
  const auto& entries = store.entries();
  std::unordered_map<std::string, std::vector<size_t>> children;
  std::vector<size_t> roots;
  for (size_t i = 0; i < entries.size(); ++i) {
    const std::string parent = str_field(entries[i], "parentId");
    if (parent.empty()) roots.push_back(i);
    else children[parent].push_back(i);
  }
  std::map<std::string, std::string> labels;
  for (const auto& [target, label] : labels_of(store)) labels[target] = label;
  // The path the next message continues is marked, so a branch left behind stands apart.
  std::vector<bool> on_path(entries.size(), false);
  for (size_t i : store.path_indices(store.leaf())) on_path[i] = true;
  std::string out = "session " + store.id() + "  " + str_field(store.header(), "workspace") + "\n";
  // Iterative depth-first walk: entries are a chain of up to 100,000, too deep to recurse.
  // Only a fork point indents its children (with tree connectors); a linear run continues
  // at its parent's indentation.
  struct Item {
    size_t index;
    std::string line_prefix;
    std::string indent;
  };
  std::vector<Item> stack;
  for (size_t r = roots.size(); r-- > 0;) {
    const bool last = r + 1 == roots.size();
    if (roots.size() > 1) stack.push_back({roots[r], last ? "└─ " : "├─ ", last ? "   " : "│  "});
    else stack.push_back({roots[r], "", ""});
  }
  while (!stack.empty()) {
    Item item = std::move(stack.back());
    stack.pop_back();
    const Entry& e = entries[item.index];
    const std::string id = str_field(e, "id");
    out +=
        (on_path[item.index] ? "* " : "  ") + item.line_prefix + id + "  " + entry_summary(e, 70);
    if (auto it = labels.find(id); it != labels.end())
      out += "  [" + one_line(it->second, 40) + "]";
    if (id == store.leaf()) out += "  <- leaf";
    out += "\n";
    const auto& kids = children[id];
    for (size_t k = kids.size(); k-- > 0;) {
      const bool last = k + 1 == kids.size();
      if (kids.size() == 1) stack.push_back({kids[k], item.indent, item.indent});
      else
        stack.push_back(
            {kids[k], item.indent + (last ? "└─ " : "├─ "), item.indent + (last ? "   " : "│  ")});
    }
  }
  return out;
}

std::string render_transcript(const std::vector<Entry>& path) {
  std::string out;
  for (const Entry& e : path) {
    const std::string type = str_field(e, "type");
    out += "[" + str_field(e, "id") + " " + str_field(e, "timestamp") + "] ";
    if (type == "message" && e.contains("message")) {
      const Entry& m = e["message"];
      out += message_summary(m, 2000) + "\n";
    } else if (type == "compaction") {
      out += entry_summary(e) + "\n" + str_field(e, "summary") + "\n";
    } else {
      out += entry_summary(e, 2000) + "\n";
    }
  }
  return out;
}

std::string session_html(const SessionStore& store, const std::vector<Entry>& path) {
  std::string out =
      "<!doctype html>\n<html><head><meta charset=\"utf-8\">"
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src "
      "'unsafe-inline'\">"
      "<title>moat session " +
      html_escape(store.id()) +
      "</title><style>"
      "body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;color:#222}"
      ".e{border-left:4px solid #ccc;margin:.6rem 0;padding:.3rem .8rem}"
      ".user{border-color:#2a7ae2}.assistant{border-color:#2e9e4f}.toolResult{border-color:#999}"
      ".error{border-color:#d33;background:#fff4f4}.meta{color:#777;font-size:.8rem}"
      "pre{white-space:pre-wrap;background:#f6f6f6;padding:.4rem;overflow-x:auto}</style></"
      "head><body>\n"
      "<h1>Session " +
      html_escape(store.id()) + "</h1>\n<p class=\"meta\">workspace " +
      html_escape(str_field(store.header(), "workspace")) + " &middot; created " +
      html_escape(str_field(store.header(), "timestamp")) + " &middot; " +
      std::to_string(path.size()) + " entries on this path</p>\n";
  for (const Entry& e : path) {
    const std::string type = str_field(e, "type");
    const Entry& m = type == "message" && e.contains("message") ? e["message"] : e;
    std::string cls = type == "message" ? str_field(m, "role") : type;
    if (type == "message" && is_error_result(m)) cls += " error";
    out += "<div class=\"e " + html_escape(cls) + "\"><div class=\"meta\">" +
           html_escape(str_field(e, "id") + " · " + str_field(e, "timestamp") + " · " + cls) +
           "</div>";
    if (type == "message") {
      const std::string text = blocks_text(m, "text", "text");
      if (!text.empty()) out += "<pre>" + html_escape(text) + "</pre>";
      if (m.contains("content") && m["content"].is_array())
        for (const auto& b : m["content"])
          if (str_field(b, "type") == "toolCall")
            out += "<pre>&#9656; " +
                   html_escape(str_field(b, "name") + " " +
                               dump_json(b.value("arguments", Entry::object()))) +
                   "</pre>";
    } else if (type == "compaction" || type == "branch_summary") {
      out += "<pre>" + html_escape(str_field(e, "summary")) + "</pre>";
    } else {
      out += "<p>" + html_escape(entry_summary(e, 400)) + "</p>";
    }
    out += "</div>\n";
  }
  return out + "</body></html>\n";
}

}  // namespace moat::sessions
