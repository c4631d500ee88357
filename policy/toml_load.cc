// policy/toml_load.cc: TOML text to PolicyFile; each error names file:line:col
// (policy/toml_reader.cc reads the values and contains toml++'s exceptions).
#include "policy/toml_load.h"

#include <toml++/toml.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "policy/mcp_import.h"
#include "policy/network.h"
#include "policy/toml_reader.h"

namespace moat::policy {
namespace {

const std::map<std::string, std::vector<std::string>, std::less<>>& key_table() {
  static const std::map<std::string, std::vector<std::string>, std::less<>> keys = {
      {"top",
       {"schema", "defaults", "resources", "layer", "exec", "workspace", "constraints", "command",
        "path", "network", "tool", "mcp"}},
      {"defaults", {"tool", "command", "read", "write", "exec", "network", "unparseable_shell"}},
      {"resources",
       {"wall_time", "cpu_time", "memory", "pids", "output", "file_size", "open_files",
        "network_connections", "network_bytes", "network_idle", "network_rate"}},
      {"layer", {"name", "revision"}},
      {"exec", {"workspace_programs", "headless_ask"}},
      {"workspace", {"nested_git"}},
      {"constraints",
       {"managed_allows_only", "allowed_modes", "managed_mcp_servers_only", "audit_required",
        "unknown_keys"}},
      {"tests", {"match", "not_match"}},
      {"command",
       {"id", "decision", "program", "program_paths", "sha256", "args", "any_flag", "all_flags",
        "no_flag", "any_arg", "any_env", "script_paths", "unless", "reason", "tests"}},
      {"command.unless", {"any_flag", "any_arg"}},
      {"path", {"id", "decision", "access", "paths", "unless", "reason", "tests"}},
      {"path.unless", {"paths"}},
      {"network", {"id", "decision", "domains", "ports", "reason"}},
      {"tool", {"id", "decision", "tool", "args", "unless", "reason", "tests"}},
      {"tool.unless", {"tool", "server"}},
      {"mcp", {"server"}},
      {"mcp.server", {"name", "command", "url", "env", "read", "start", "resources"}},
  };
  return keys;
}

// Reads one policy file: the shared reader, with the key table of each policy table.
class Reader : public TomlReader {
 public:
  Reader(const ParseOptions& options, std::vector<std::string>* notices)
      : TomlReader(options.file, options.unknown_keys_are_errors, notices), options_(options) {}

  Result<void> check_keys(const toml::table& t, std::string_view table, const std::string& path) {
    return TomlReader::check_keys(t, key_table().find(table)->second, path);
  }

  Result<Verdict> verdict(const toml::node& n, const std::string& key) {
    MOAT_ASSIGN_OR_RETURN(std::string s, string(n, key));
    if (s == "allow") return Verdict::kAllow;
    if (s == "ask") return Verdict::kAsk;
    if (s == "deny") return Verdict::kDeny;
    return error_at(n.source(), key,
                    "expected one of \"allow\", \"ask\", \"deny\", got \"" + s + "\"");
  }

  const ParseOptions& options() const { return options_; }

 private:
  const ParseOptions& options_;
};

Result<void> read_defaults(Reader& r, const toml::table& t, Defaults& d) {
  MOAT_TRY(r.check_keys(t, "defaults", "defaults"));
  struct Slot {
    const char* key;
    std::optional<Verdict>* out;
  };
  const Slot slots[] = {{"tool", &d.tool},
                        {"command", &d.command},
                        {"read", &d.read},
                        {"write", &d.write},
                        {"exec", &d.exec},
                        {"network", &d.network},
                        {"unparseable_shell", &d.unparseable_shell}};
  for (const auto& slot : slots) {
    if (const auto* n = t.get(slot.key)) {
      MOAT_ASSIGN_OR_RETURN(*slot.out, r.verdict(*n, std::string("defaults.") + slot.key));
    }
  }
  return {};
}

Result<void> read_exec(Reader& r, const toml::table& t, ExecSettings& e) {
  MOAT_TRY(r.check_keys(t, "exec", "exec"));
  if (const auto* n = t.get("workspace_programs")) {
    MOAT_ASSIGN_OR_RETURN(e.workspace_programs, r.verdict(*n, "exec.workspace_programs"));
  }
  if (const auto* n = t.get("headless_ask")) {
    // Headless, nobody can answer: "ask" would mean deny, so only the two outcomes are named.
    MOAT_ASSIGN_OR_RETURN(std::string s, r.string(*n, "exec.headless_ask"));
    if (s != "allow" && s != "deny")
      return r.error_at(n->source(), "exec.headless_ask",
                        "expected one of \"allow\", \"deny\", got \"" + s + "\"");
    e.headless_ask = s == "allow" ? Verdict::kAllow : Verdict::kDeny;
  }
  return {};
}

Result<void> read_workspace(Reader& r, const toml::table& t, WorkspaceSettings& w) {
  MOAT_TRY(r.check_keys(t, "workspace", "workspace"));
  if (const auto* n = t.get("nested_git")) {
    // Kept or removed: nobody is asked when a call ends, so only the two outcomes are named.
    MOAT_ASSIGN_OR_RETURN(std::string s, r.string(*n, "workspace.nested_git"));
    if (s != "allow" && s != "deny")
      return r.error_at(n->source(), "workspace.nested_git",
                        "expected one of \"allow\", \"deny\", got \"" + s + "\"");
    w.nested_git = s == "allow" ? Verdict::kAllow : Verdict::kDeny;
  }
  return {};
}

// `key` is the table's own key: "resources", or "mcp.server[0].resources".
Result<void> read_resources(Reader& r, const toml::table& t, Resources& res,
                            const std::string& key_prefix = "resources") {
  MOAT_TRY(r.check_keys(t, "resources", key_prefix));
  struct Slot {
    const char* key;
    std::optional<std::int64_t>* out;
    int kind;
  };  // 0 dur 1 size 2 count
  const Slot slots[] = {{"wall_time", &res.wall_time, 0},
                        {"cpu_time", &res.cpu_time, 0},
                        {"memory", &res.memory, 1},
                        {"pids", &res.pids, 2},
                        {"output", &res.output, 1},
                        {"file_size", &res.file_size, 1},
                        {"open_files", &res.open_files, 2},
                        {"network_connections", &res.network_connections, 2},
                        {"network_bytes", &res.network_bytes, 1},
                        {"network_idle", &res.network_idle, 0},
                        {"network_rate", &res.network_rate, 2}};
  for (const auto& slot : slots) {
    const auto* n = t.get(slot.key);
    if (n == nullptr) continue;
    const std::string key = key_prefix + "." + slot.key;
    if (slot.kind == 2) {
      MOAT_ASSIGN_OR_RETURN(*slot.out, r.integer(*n, key, 1, 1 << 20));
    } else {
      MOAT_ASSIGN_OR_RETURN(*slot.out, r.quantity(*n, key, slot.kind == 0));
    }
  }
  return {};
}

Result<void> read_constraints(Reader& r, const toml::table& t, Constraints& c) {
  MOAT_TRY(r.check_keys(t, "constraints", "constraints"));
  if (const auto* n = t.get("managed_allows_only")) {
    MOAT_ASSIGN_OR_RETURN(c.managed_allows_only, r.one_of(*n, "constraints.managed_allows_only",
                                                          {"command", "path", "network", "tool"}));
  }
  if (const auto* n = t.get("allowed_modes")) {
    MOAT_ASSIGN_OR_RETURN(c.allowed_modes, r.strings(*n, "constraints.allowed_modes"));
  }
  if (const auto* n = t.get("managed_mcp_servers_only")) {
    MOAT_ASSIGN_OR_RETURN(c.managed_mcp_servers_only,
                          r.boolean(*n, "constraints.managed_mcp_servers_only"));
  }
  if (const auto* n = t.get("audit_required")) {
    MOAT_ASSIGN_OR_RETURN(c.audit_required, r.boolean(*n, "constraints.audit_required"));
  }
  if (const auto* n = t.get("unknown_keys")) {
    MOAT_ASSIGN_OR_RETURN(Strings v, r.one_of(*n, "constraints.unknown_keys", {"error", "warn"}));
    if (v.size() != 1)
      return r.error_at(n->source(), "constraints.unknown_keys", "expected one string");
    c.unknown_keys = v[0];
  }
  return {};
}

// A key of a rule that holds a string or a list of them, and where it goes.
struct StringsSlot {
  const char* name;
  Strings* out;
};

// Each slot that `t` (at `key`) holds.
Result<void> read_strings(Reader& r, const toml::table& t, const std::string& key,
                          std::initializer_list<StringsSlot> slots) {
  for (const auto& slot : slots) {
    if (const auto* n = t.get(slot.name)) {
      MOAT_ASSIGN_OR_RETURN(*slot.out, r.strings(*n, key + "." + slot.name));
    }
  }
  return {};
}

// A rule's optional sub-table of strings (tests, unless), checked against the keys of
// `table_kind`.
Result<void> read_sub_strings(Reader& r, const toml::table& rule, const char* name,
                              std::string_view table_kind, const std::string& key,
                              std::initializer_list<StringsSlot> slots) {
  const auto* n = rule.get(name);
  if (n == nullptr) return {};
  const std::string sub = key + "." + name;
  MOAT_ASSIGN_OR_RETURN(const toml::table* t, r.table(*n, sub));
  MOAT_TRY(r.check_keys(*t, table_kind, sub));
  return read_strings(r, *t, sub, slots);
}

Result<void> read_tests(Reader& r, const toml::table& rule, const std::string& key,
                        RuleTests& tests) {
  return read_sub_strings(r, rule, "tests", "tests", key,
                          {{"match", &tests.match}, {"not_match", &tests.not_match}});
}

// What every rule kind shares: no key unknown to `kind`; id (required), decision (required),
// reason.
template <typename Rule>
Result<void> read_rule_head(Reader& r, const toml::table& t, std::string_view kind,
                            const std::string& key, Rule& rule) {
  MOAT_TRY(r.check_keys(t, kind, key));
  rule.pos = SourcePos{r.options().file, static_cast<int>(t.source().begin.line),
                       static_cast<int>(t.source().begin.column)};
  MOAT_ASSIGN_OR_RETURN(const toml::node* id, r.required(t, "id", key));
  MOAT_ASSIGN_OR_RETURN(rule.id, r.string(*id, key + ".id"));
  for (unsigned char c : rule.id)
    if (!(std::isalnum(c) || c == '.' || c == '-' || c == '_' || c == ':'))
      return r.error_at(id->source(), key + ".id", "expected letters, digits and . - _ : only");
  MOAT_ASSIGN_OR_RETURN(const toml::node* d, r.required(t, "decision", key));
  MOAT_ASSIGN_OR_RETURN(rule.decision, r.verdict(*d, key + ".decision"));
  if (const auto* n = t.get("reason")) {
    MOAT_ASSIGN_OR_RETURN(rule.reason, r.string(*n, key + ".reason"));
  }
  return {};
}

Result<std::vector<ArgPattern>> read_args(Reader& r, const toml::node& n, const std::string& key) {
  const auto* a = n.as_array();
  if (a == nullptr)
    return r.error_at(n.source(), key, "expected an array of strings or arrays of strings");
  std::vector<ArgPattern> out;
  for (const auto& e : *a) {
    if (e.is_array() && e.as_array()->empty())
      return r.error_at(e.source(), key, "an alternatives list must not be empty");
    MOAT_ASSIGN_OR_RETURN(Strings alts, r.strings(e, key));
    if (alts.size() > 1 && std::find(alts.begin(), alts.end(), "**") != alts.end())
      return r.error_at(e.source(), key, "\"**\" cannot be one of several alternatives");
    out.push_back(ArgPattern{std::move(alts)});
  }
  for (std::size_t i = 0; i + 1 < out.size(); ++i)
    if (out[i].alternatives == Strings{"**"})
      return r.error_at(n.source(), key, "\"**\" (the rest) must be the last pattern");
  return out;
}

Result<CommandRule> read_command(Reader& r, const toml::table& t, const std::string& key) {
  CommandRule rule;
  MOAT_TRY(read_rule_head(r, t, "command", key, rule));
  MOAT_TRY(read_strings(r, t, key,
                        {{"program", &rule.program},
                         {"program_paths", &rule.program_paths},
                         {"any_flag", &rule.any_flag},
                         {"all_flags", &rule.all_flags},
                         {"no_flag", &rule.no_flag},
                         {"any_arg", &rule.any_arg},
                         {"any_env", &rule.any_env},
                         {"script_paths", &rule.script_paths}}));
  for (const auto& p : rule.program_paths)
    if (p.front() != '/')
      return r.error_at(t.get("program_paths")->source(), key + ".program_paths",
                        "expected absolute paths, got \"" + p + "\"");
  if (const auto* n = t.get("sha256")) {
    MOAT_ASSIGN_OR_RETURN(rule.sha256, r.string(*n, key + ".sha256"));
    bool hex = rule.sha256.size() == 64 &&
               std::all_of(rule.sha256.begin(), rule.sha256.end(),
                           [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); });
    if (!hex) return r.error_at(n->source(), key + ".sha256", "expected 64 hex digits");
    std::transform(rule.sha256.begin(), rule.sha256.end(), rule.sha256.begin(), [](char c) {
      return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    });
  }
  if ((!rule.program_paths.empty() || !rule.sha256.empty()) && rule.decision != Verdict::kAllow)
    return r.error_at(
        t.source(), key + ".program_paths",
        "pins (program_paths, sha256) only narrow allow rules; use program for deny/ask");
  if (const auto* n = t.get("args")) {
    MOAT_ASSIGN_OR_RETURN(rule.args, read_args(r, *n, key + ".args"));
  }
  MOAT_TRY(
      read_sub_strings(r, t, "unless", "command.unless", key,
                       {{"any_flag", &rule.unless.any_flag}, {"any_arg", &rule.unless.any_arg}}));
  MOAT_TRY(read_tests(r, t, key, rule.tests));
  return rule;
}

Result<PathRule> read_path(Reader& r, const toml::table& t, const std::string& key) {
  PathRule rule;
  MOAT_TRY(read_rule_head(r, t, "path", key, rule));
  MOAT_ASSIGN_OR_RETURN(const toml::node* access, r.required(t, "access", key));
  MOAT_ASSIGN_OR_RETURN(rule.access, r.one_of(*access, key + ".access", {"read", "write", "exec"}));
  MOAT_ASSIGN_OR_RETURN(rule.paths, r.required_strings(t, "paths", key));
  MOAT_TRY(read_sub_strings(r, t, "unless", "path.unless", key, {{"paths", &rule.unless.paths}}));
  MOAT_TRY(read_tests(r, t, key, rule.tests));
  return rule;
}

Result<NetworkRule> read_network(Reader& r, const toml::table& t, const std::string& key) {
  NetworkRule rule;
  MOAT_TRY(read_rule_head(r, t, "network", key, rule));
  MOAT_ASSIGN_OR_RETURN(rule.domains, r.required_strings(t, "domains", key));
  for (auto& d : rule.domains) {
    auto normal = normalize_domain_pattern(d);
    if (!normal)
      return r.error_at(t.get("domains")->source(), key + ".domains",
                        "'" + d + "' is not a host name, an IP address or \"*.\" and a name");
    d = *normal;
  }
  if (const auto* n = t.get("ports")) {
    const auto* a = n->as_array();
    if (a == nullptr)
      return r.error_at(n->source(), key + ".ports", "expected an array of integers");
    for (const auto& e : *a) {
      MOAT_ASSIGN_OR_RETURN(std::int64_t port, r.integer(e, key + ".ports", 1, 65535));
      rule.ports.push_back(port);
    }
  }
  return rule;
}

// RFC 6901: "/" then reference tokens, in which "~" is only "~0" or "~1".
bool is_json_pointer(std::string_view s) {
  if (s.empty() || s[0] != '/') return false;
  for (std::size_t i = 0; i < s.size(); ++i)
    if (s[i] == '~' && (i + 1 == s.size() || (s[i + 1] != '0' && s[i + 1] != '1'))) return false;
  return true;
}

// [[tool]].args: { NAME = globs, "/json/pointer" = globs }. A pointer's "~" must be "~0" or
// "~1" (RFC 6901); a name holds no "/" (it would be a pointer).
Result<std::vector<ToolArgCondition>> read_tool_args(Reader& r, const toml::node& n,
                                                     const std::string& key) {
  MOAT_ASSIGN_OR_RETURN(const toml::table* t, r.table(n, key));
  std::vector<ToolArgCondition> out;
  for (const auto& [k, v] : *t) {
    const std::string name(k.str());
    const std::string sub = key + "." + name;
    if (name.empty() || (name[0] != '/' && name.find('/') != std::string::npos))
      return r.error_at(k.source(), sub,
                        "expected an argument name without \"/\" or a JSON pointer (\"/a/b\")");
    if (name[0] == '/' && !is_json_pointer(name))
      return r.error_at(k.source(), sub, "not a JSON pointer: \"~\" must be written ~0 or ~1");
    MOAT_ASSIGN_OR_RETURN(Strings globs, r.strings(v, sub));
    out.push_back(ToolArgCondition{name, std::move(globs)});
  }
  return out;
}

Result<ToolRule> read_tool(Reader& r, const toml::table& t, const std::string& key) {
  ToolRule rule;
  MOAT_TRY(read_rule_head(r, t, "tool", key, rule));
  MOAT_ASSIGN_OR_RETURN(rule.tool, r.required_strings(t, "tool", key));
  if (const auto* n = t.get("args")) {
    MOAT_ASSIGN_OR_RETURN(rule.args, read_tool_args(r, *n, key + ".args"));
  }
  if (const auto* n = t.get("tests"); n != nullptr && n->is_table()) {
    for (const char* which : {"match", "not_match"})
      if (const auto* m = n->as_table()->get(which)) {
        MOAT_ASSIGN_OR_RETURN(Strings inputs, r.strings(*m, key + ".tests." + which));
        for (const auto& input : inputs)
          if (auto parsed = parse_tool_test(input); !parsed)
            return r.error_at(m->source(), key + ".tests." + which, parsed.error().message());
      }
  }
  MOAT_TRY(read_sub_strings(r, t, "unless", "tool.unless", key,
                            {{"tool", &rule.unless.tool}, {"server", &rule.unless.server}}));
  MOAT_TRY(read_tests(r, t, key, rule.tests));
  return rule;
}

// Reads every table of an array of tables ([[command]] etc.) with `read`.
template <typename Rule, typename Fn>
Result<void> read_rules(Reader& r, const toml::node& n, const std::string& name,
                        std::vector<Rule>& out, Fn read) {
  const auto* a = n.as_array();
  if (a == nullptr)
    return r.error_at(n.source(), name, "expected an array of tables ([[" + name + "]])");
  for (std::size_t i = 0; i < a->size(); ++i) {
    const std::string key = name + "[" + std::to_string(i) + "]";
    MOAT_ASSIGN_OR_RETURN(const toml::table* t, r.table((*a)[i], key));
    MOAT_ASSIGN_OR_RETURN(Rule rule, read(r, *t, key));
    out.push_back(std::move(rule));
  }
  return {};
}

SourcePos pos_of(const Reader& r, const toml::source_region& src) {
  return SourcePos{r.options().file, static_cast<int>(src.begin.line),
                   static_cast<int>(src.begin.column)};
}

// command or url, exactly one; an argv whose every word is non-empty, bounded.
Result<void> read_mcp_endpoint(Reader& r, const toml::table& t, const std::string& key,
                               McpServerDecl& s) {
  const auto* cmd = t.get("command");
  const auto* url = t.get("url");
  if ((cmd == nullptr) == (url == nullptr))
    return r.error_at(t.source(), key,
                      cmd ? "give either command (a stdio server) or url (an HTTP server), not both"
                          : "needs command = [\"program\", \"arg\"...] (stdio) or url = "
                            "\"https://...\" (HTTP)");
  if (cmd != nullptr) {
    MOAT_ASSIGN_OR_RETURN(s.command, r.strings(*cmd, key + ".command"));
    if (s.command.empty())
      return r.error_at(cmd->source(), key + ".command", "expected a non-empty argv");
    if (s.command.size() > kMaxMcpArgv)
      return r.error_at(cmd->source(), key + ".command",
                        "more than " + std::to_string(kMaxMcpArgv) + " words");
    return {};
  }
  MOAT_ASSIGN_OR_RETURN(s.url, r.string(*url, key + ".url"));
  if (s.url.rfind("http://", 0) != 0 && s.url.rfind("https://", 0) != 0)
    return r.error_at(url->source(), key + ".url", "expected an http:// or https:// URL");
  return {};
}

Result<McpServerDecl> read_mcp_server(Reader& r, const toml::table& t, const std::string& key) {
  MOAT_TRY(r.check_keys(t, "mcp.server", key));
  McpServerDecl s;
  s.pos = pos_of(r, t.source());
  MOAT_ASSIGN_OR_RETURN(const toml::node* name, r.required(t, "name", key));
  MOAT_ASSIGN_OR_RETURN(s.name, r.string(*name, key + ".name"));
  if (!is_mcp_server_name(s.name))
    return r.error_at(name->source(), key + ".name",
                      "\"" + s.name + "\": expected 1 to 32 of A-Z a-z 0-9 _ -, without \"__\"");
  MOAT_TRY(read_mcp_endpoint(r, t, key, s));
  MOAT_TRY(read_strings(r, t, key, {{"env", &s.env}, {"read", &s.read}}));
  if (!s.env.empty() && r.options().repository)
    return r.error_at(t.get("env")->source(), key + ".env",
                      "a repository's server may not take the person's variables; declare it in "
                      "the user or system layer");
  for (const auto& d : s.read)
    if (d.front() != '/')
      return r.error_at(t.get("read")->source(), key + ".read",
                        "expected absolute directories, got \"" + d + "\"");
  if (const auto* n = t.get("start")) {
    MOAT_ASSIGN_OR_RETURN(Strings v, r.one_of(*n, key + ".start", {"session", "on-use"}));
    if (v.size() != 1) return r.error_at(n->source(), key + ".start", "expected one string");
    s.start = v[0];
  }
  if (const auto* n = t.get("resources")) {
    MOAT_ASSIGN_OR_RETURN(const toml::table* rt, r.table(*n, key + ".resources"));
    MOAT_TRY(read_resources(r, *rt, s.resources, key + ".resources"));
  }
  return s;
}

// [mcp] with its [[mcp.server]] array; two servers of one file may not share a name.
Result<void> read_mcp(Reader& r, const toml::node& n, McpTable& mcp) {
  MOAT_ASSIGN_OR_RETURN(const toml::table* t, r.table(n, "mcp"));
  MOAT_TRY(r.check_keys(*t, "mcp", "mcp"));
  const auto* servers = t->get("server");
  if (servers == nullptr) return {};
  MOAT_TRY(read_rules(r, *servers, "mcp.server", mcp.server, read_mcp_server));
  if (mcp.server.size() > kMaxMcpServers)
    return r.error_at(servers->source(), "mcp.server",
                      "more than " + std::to_string(kMaxMcpServers) + " servers");
  for (std::size_t i = 0; i < mcp.server.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (mcp.server[i].name == mcp.server[j].name)
        return r.error_at(
            (*servers->as_array())[i].source(), "mcp.server[" + std::to_string(i) + "].name",
            "\"" + mcp.server[i].name + "\" is already declared at line " +
                std::to_string(mcp.server[j].pos.line) + "; names must be unique in a file");
  return {};
}

Result<PolicyFile> read_top(Reader& r, const toml::table& top) {
  MOAT_TRY(r.check_keys(top, "top", ""));
  PolicyFile p;
  p.file = r.options().file;
  const auto* schema = top.get("schema");
  if (schema == nullptr)
    return r.error_at(top.source(), "schema", "required key is missing; accepted: 1");
  MOAT_ASSIGN_OR_RETURN(p.schema, r.integer(*schema, "schema", 1, 1));
  if (const auto* n = top.get("defaults")) {
    MOAT_ASSIGN_OR_RETURN(const toml::table* t, r.table(*n, "defaults"));
    MOAT_TRY(read_defaults(r, *t, p.defaults));
    p.defaults_pos = SourcePos{p.file, static_cast<int>(n->source().begin.line),
                               static_cast<int>(n->source().begin.column)};
  }
  if (const auto* n = top.get("resources")) {
    MOAT_ASSIGN_OR_RETURN(const toml::table* t, r.table(*n, "resources"));
    MOAT_TRY(read_resources(r, *t, p.resources));
  }
  if (const auto* n = top.get("layer")) {
    MOAT_ASSIGN_OR_RETURN(const toml::table* t, r.table(*n, "layer"));
    MOAT_TRY(r.check_keys(*t, "layer", "layer"));
    if (const auto* m = t->get("name")) {
      MOAT_ASSIGN_OR_RETURN(p.layer.name, r.string(*m, "layer.name"));
    }
    if (const auto* m = t->get("revision")) {
      MOAT_ASSIGN_OR_RETURN(p.layer.revision, r.string(*m, "layer.revision"));
    }
  }
  if (const auto* n = top.get("exec")) {
    MOAT_ASSIGN_OR_RETURN(const toml::table* t, r.table(*n, "exec"));
    MOAT_TRY(read_exec(r, *t, p.exec));
    p.exec_pos = SourcePos{p.file, static_cast<int>(n->source().begin.line),
                           static_cast<int>(n->source().begin.column)};
  }
  if (const auto* n = top.get("workspace")) {
    MOAT_ASSIGN_OR_RETURN(const toml::table* t, r.table(*n, "workspace"));
    MOAT_TRY(read_workspace(r, *t, p.workspace));
    p.workspace_pos = SourcePos{p.file, static_cast<int>(n->source().begin.line),
                                static_cast<int>(n->source().begin.column)};
  }
  if (const auto* n = top.get("constraints")) {
    MOAT_ASSIGN_OR_RETURN(const toml::table* t, r.table(*n, "constraints"));
    p.constraints.emplace();
    MOAT_TRY(read_constraints(r, *t, *p.constraints));
  }
  if (const auto* n = top.get("command"))
    MOAT_TRY(read_rules(r, *n, "command", p.command, read_command));
  if (const auto* n = top.get("path")) MOAT_TRY(read_rules(r, *n, "path", p.path, read_path));
  if (const auto* n = top.get("network"))
    MOAT_TRY(read_rules(r, *n, "network", p.network, read_network));
  if (const auto* n = top.get("tool")) MOAT_TRY(read_rules(r, *n, "tool", p.tool, read_tool));
  if (const auto* n = top.get("mcp")) MOAT_TRY(read_mcp(r, *n, p.mcp));
  return p;
}

// Ids name rules in audit records, so two rules of one file may not share one.
Result<void> check_unique_ids(const PolicyFile& p) {
  std::set<std::string> seen;
  auto check = [&](const std::string& id, const SourcePos& pos) -> Result<void> {
    if (seen.insert(id).second) return {};
    return fail(pos.file + ":" + std::to_string(pos.line) + ":" + std::to_string(pos.column) +
                ": id: \"" + id + "\" is used by an earlier rule; ids must be unique");
  };
  for (const auto& r : p.command) MOAT_TRY(check(r.id, r.pos));
  for (const auto& r : p.path) MOAT_TRY(check(r.id, r.pos));
  for (const auto& r : p.network) MOAT_TRY(check(r.id, r.pos));
  for (const auto& r : p.tool) MOAT_TRY(check(r.id, r.pos));
  return {};
}

}  // namespace

Result<ToolTestInput> parse_tool_test(std::string_view input) {
  ToolTestInput out;
  const std::size_t space = input.find(' ');
  out.tool = std::string(input.substr(0, space));
  if (space == std::string_view::npos) return out;
  out.args = nlohmann::json::parse(input.substr(space + 1), nullptr, /*allow_exceptions=*/false);
  if (out.args.is_discarded() || !out.args.is_object())
    return fail("\"" + std::string(input) +
                "\": expected a tool name, then optionally a space and the arguments as a JSON "
                "object");
  return out;
}

const std::vector<std::string>& known_keys(std::string_view table) {
  static const std::vector<std::string> none;
  auto it = key_table().find(table);
  return it == key_table().end() ? none : it->second;
}

Result<PolicyFile> parse_policy_text(std::string_view text, const ParseOptions& options,
                                     std::vector<std::string>* notices) {
  if (text.size() > kMaxPolicyFileBytes)
    return fail(options.file + ":1:1: file is larger than " + std::to_string(kMaxPolicyFileBytes) +
                " bytes");
  Reader reader(options, notices);
  MOAT_ASSIGN_OR_RETURN(toml::table top, parse_toml_text(text, options.file));
  MOAT_ASSIGN_OR_RETURN(PolicyFile p, read_top(reader, top));
  MOAT_TRY(check_unique_ids(p));
  return p;
}

}  // namespace moat::policy
