// policy/mcp_import.cc: a repository's .mcp.json / .vscode/mcp.json to [[mcp.server]]
// declarations of the project layer.
#include "policy/mcp_import.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>

#include "policy/file_limits.h"

namespace moat::policy {
namespace {

using nlohmann::json;

// The line and column of `"name"` in the text: where a decision or a notice points.
SourcePos pos_of_name(std::string_view text, const std::string& file, const std::string& name) {
  SourcePos pos{file, 1, 1};
  const std::size_t at = text.find("\"" + name + "\"");
  if (at == std::string_view::npos) return pos;
  for (std::size_t i = 0; i < at; ++i) {
    ++pos.column;
    if (text[i] == '\n') {
      ++pos.line;
      pos.column = 1;
    }
  }
  return pos;
}

Failure entry_error(const SourcePos& pos, const std::string& ptr, const std::string& what) {
  return fail(pos.file + ":" + std::to_string(pos.line) + ":" + std::to_string(pos.column) +
              ": " + ptr + ": " + what);
}

Result<Strings> string_array(const json& v, const SourcePos& pos, const std::string& ptr) {
  if (!v.is_array()) return entry_error(pos, ptr, "expected an array of strings");
  Strings out;
  for (const auto& e : v) {
    if (!e.is_string() || e.get_ref<const std::string&>().empty())
      return entry_error(pos, ptr, "expected non-empty strings");
    out.push_back(e.get<std::string>());
  }
  return out;
}

Result<McpServerDecl> import_one(const std::string& name, const json& e, const SourcePos& pos,
                                 const std::string& ptr, std::vector<std::string>* notices) {
  if (!is_mcp_server_name(name))
    return entry_error(pos, ptr, "expected a name of 1 to 32 of A-Z a-z 0-9 _ -, without \"__\"");
  if (!e.is_object()) return entry_error(pos, ptr, "expected an object");
  McpServerDecl s;
  s.name = name;
  s.pos = pos;
  const std::string type = e.value("type", "");
  if (e.contains("command") == e.contains("url"))
    return entry_error(pos, ptr, "expected either \"command\" (stdio) or \"url\" (http)");
  if (e.contains("url")) {
    if (!e["url"].is_string() || (type != "" && type != "http" && type != "streamable-http"))
      return entry_error(pos, ptr + "/url",
                         "expected a string, with \"type\" absent, \"http\" or \"streamable-http\"");
    s.url = e["url"].get<std::string>();
    if (s.url.rfind("http://", 0) != 0 && s.url.rfind("https://", 0) != 0)
      return entry_error(pos, ptr + "/url", "expected an http:// or https:// URL");
  } else {
    if (!e["command"].is_string() || e["command"].get_ref<const std::string&>().empty() ||
        (type != "" && type != "stdio"))
      return entry_error(pos, ptr + "/command",
                         "expected a non-empty string, with \"type\" absent or \"stdio\"");
    s.command.push_back(e["command"].get<std::string>());
    if (e.contains("args")) {
      MOAT_ASSIGN_OR_RETURN(Strings args, string_array(e["args"], pos, ptr + "/args"));
      s.command.insert(s.command.end(), args.begin(), args.end());
    }
    if (s.command.size() > kMaxMcpArgv)
      return entry_error(pos, ptr + "/args", "more than " + std::to_string(kMaxMcpArgv) + " words");
  }
  if (e.contains("env") && notices != nullptr)
    notices->push_back(pos.file + ":" + std::to_string(pos.line) + ":" +
                       std::to_string(pos.column) + ": " + ptr +
                       "/env: not passed; a repository's server gets none of the person's "
                       "variables (declare it in the user layer to pass some)");
  return s;
}

}  // namespace

bool is_mcp_server_name(std::string_view name) {
  if (name.empty() || name.size() > 32 || name.find("__") != std::string_view::npos) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
  });
}

Result<std::vector<McpServerDecl>> import_mcp_json(std::string_view text, const std::string& file,
                                                   std::vector<std::string>* notices) {
  if (text.size() > kMaxPolicyFileBytes)
    return fail(file + ":1:1: file is larger than " + std::to_string(kMaxPolicyFileBytes) +
                " bytes");
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object())
    return fail(file + ":1:1: not a JSON object; expected {\"mcpServers\": {NAME: {...}}} or "
                       "{\"servers\": {NAME: {...}}}");
  const char* key = doc.contains("mcpServers") ? "mcpServers" : "servers";
  std::vector<McpServerDecl> out;
  if (!doc.contains(key)) return out;
  const json& servers = doc[key];
  const std::string ptr = std::string("/") + key;
  if (!servers.is_object())
    return fail(file + ":1:1: " + ptr + ": expected an object of servers by name");
  if (servers.size() > kMaxMcpServers)
    return fail(file + ":1:1: " + ptr + ": more than " + std::to_string(kMaxMcpServers) +
                " servers");
  for (const auto& [name, e] : servers.items()) {
    MOAT_ASSIGN_OR_RETURN(McpServerDecl s, import_one(name, e, pos_of_name(text, file, name),
                                                      ptr + "/" + name, notices));
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace moat::policy
