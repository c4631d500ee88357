// agent/cli_mcp.cc: `moat mcp list|test`: the MCP servers the policy layers declare, trusted or
// not, and a server started in a sandbox through moatd, initialized, its tools listed with the
// decision each would get (docs/mcp.md).
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "agent/cli.h"
#include "agent/moatd_start.h"
#include "agent/visible.h"
#include "base/byte_strings.h"
#include "base/log.h"
#include "base/moat_dirs.h"
#include "base/sys.h"
#include "base/shell_words.h"
#include "base/workspace_path.h"
#include "policy/layer.h"
#include "policy/mcp_import.h"
#include "policy/mcp_servers.h"
#include "policy/policy.h"
#include "policy/toml_load.h"
#include "sandbox/protocol.h"
#include "tools/mcp_client.h"
#include "tools/mcp_names.h"

namespace moat::agent {
namespace {

using nlohmann::json;
namespace mcp = tools::mcp;

// How long `moat mcp test` and `list` give one server to start, answer and list its tools.
constexpr double kProbeTimeoutS = 60;

struct McpArgs {
  MoatdPassThrough moatd;
  std::string workspace, trust_dir, name;
  bool json = false;
  bool no_start = false;  // list: only what the layers declare
  bool headless = false;  // decide as a headless run (ask becomes deny)
};

// A declared server and whether a session would run it.
struct Listed {
  policy::McpServerConfig config;
  bool trusted = true;
  std::string skipped;  // why it does not run (an untrusted repository's declaration)
};

// What starting a server told us: its tools, or why it did not start.
struct Probe {
  bool started = false;
  std::string error;
  mcp::ServerInfo info;
  std::vector<mcp::ToolInfo> tools;
};

void add_flags(CLI::App* cmd, McpArgs& a) {
  add_moatd_pass_through(*cmd, a.moatd);
  cmd->add_option("--workspace,-C", a.workspace, "Workspace (project layer) [default: cwd]");
  cmd->add_option("--trust-dir", a.trust_dir, "Where project trust pins live [env MOAT_TRUST_DIR]");
  cmd->add_flag("--json", a.json, "Print JSON");
  cmd->add_flag("--headless", a.headless, "Decide as a headless run (ask becomes deny)");
}

Result<std::string> workspace_of(const McpArgs& a) {
  char buf[4096];
  const std::string given = !a.workspace.empty() ? a.workspace : ::getcwd(buf, sizeof buf) ? buf : ".";
  return canonical_workspace(given);
}

// The layers as the private moatd of `moat mcp test` loads them (base/moat_dirs.h).
policy::LoadOptions load_options(const McpArgs& a, const std::string& workspace) {
  policy::LoadOptions o;
  o.system_dir = dirs::or_default(a.moatd.system_policy_dir, dirs::system_policy());
  o.user_dir = dirs::or_default(a.moatd.user_policy_dir, dirs::user_policy());
  o.trust_dir = dirs::or_default(a.trust_dir, dirs::trust());
  o.workspace = workspace;
  o.extra_files = a.moatd.policy_files;
  o.use_builtin_default = !a.moatd.no_default_policy;
  o.headless = a.headless;
  return o;
}

std::string where(const policy::SourcePos& p) { return p.file + ":" + std::to_string(p.line); }

// A repository file, read within the policy loader's bound.
Result<std::string> read_bounded(const std::string& path) {
  MOAT_ASSIGN_OR_RETURN(UniqueFd fd, sys::open_path(path, O_RDONLY));
  auto text = sys::read_to_end(fd.get(), policy::kMaxPolicyFileBytes);
  if (!text) return fail(text.error().with_context(path));
  return text;
}

// An untrusted repository's declarations, read (never run) so the person sees what trusting it
// would start: its .moat/policy.toml's [[mcp.server]] and its imported .mcp.json files.
std::vector<Listed> untrusted_servers(const policy::ProjectTrust& t, std::vector<std::string>* notes) {
  std::vector<policy::McpServerDecl> decls;
  auto take = [&](Result<std::vector<policy::McpServerDecl>> r) {
    if (!r) return notes->push_back(r.error().message());
    decls.insert(decls.end(), r->begin(), r->end());
  };
  if (!t.policy_sha256.empty()) {
    auto text = read_bounded(t.file);
    auto file = text ? policy::parse_policy_text(*text, {t.file, false, true}, notes)
                     : Result<policy::PolicyFile>(fail(text.error()));
    take(file ? Result<std::vector<policy::McpServerDecl>>(file->mcp.server)
              : Result<std::vector<policy::McpServerDecl>>(fail(file.error())));
  }
  for (const auto& f : t.imports) {
    auto text = read_bounded(f);
    take(text ? policy::import_mcp_json(*text, f, notes)
              : Result<std::vector<policy::McpServerDecl>>(fail(text.error())));
  }
  std::vector<Listed> out;
  for (const auto& d : decls)
    out.push_back({{d.name, d.command, d.url, d.env, d.read, d.start, d.resources, "project", d.pos},
                   false,
                   t.skipped.empty() ? "the project is not trusted (moat policy trust)" : t.skipped});
  return out;
}

// The person's values of the variables a server may have (its env names; unset ones are left
// out): nothing else of this environment reaches the sandbox.
std::map<std::string, std::string> server_env(const policy::McpServerConfig& s) {
  std::map<std::string, std::string> env;
  for (const auto& name : s.env)
    if (const char* v = std::getenv(name.c_str())) env[name] = v;
  return env;
}

// Each `read` directory bound read-only at its own path (what moatd's host does for it).
Result<std::vector<sandbox::BindMount>> read_binds(const policy::McpServerConfig& s) {
  std::vector<sandbox::BindMount> out;
  for (const auto& dir : s.read) {
    auto source = real_path(dir);
    if (!source)
      return fail(source.error().with_context("mcp server " + moat::quoted(s.name) + ": read " +
                                              moat::quoted(dir) + " (" + where(s.pos) + ")"));
    out.push_back({*source, dir, false});
  }
  return out;
}

// Talks MCP to the server on `to`/`from` while moatd runs it: initialize, tools/list, close.
// `ended` stops the waits when the server's exec has ended (refused, crashed) before answering.
void speak(Probe& p, const std::string& name, UniqueFd to, UniqueFd from, std::stop_token ended) {
  mcp::ServerLimits limits;
  limits.request_timeout = std::chrono::milliseconds(static_cast<int>(kProbeTimeoutS * 1000));
  auto client = mcp::Client::start(name, std::move(to), std::move(from), limits, ended);
  if (!client) {
    p.error = client.error().message();
    return;
  }
  p.info = (*client)->info();
  auto tools = (*client)->list_tools(ended);
  if (tools) p.tools = std::move(*tools);
  else p.error = tools.error().message();
  p.started = static_cast<bool>(tools);
  (*client)->close();  // its stdin closes: the server ends, and so does the exec
}

std::string result_text(const tools::ToolResult& r) {
  std::string out;
  for (const auto& b : r.content)
    if (b.value("type", "") == "text") out += b.value("text", "");
  return out;
}

// A private moatd's session for `s`: its `read` directories bound, no network.
Result<std::unique_ptr<MoatdClient>> session_for(const McpArgs& a, const std::string& workspace,
                                                 const policy::McpServerConfig& s) {
  MOAT_ASSIGN_OR_RETURN(auto binds, read_binds(s));
  MoatdPassThrough moatd = a.moatd;
  moatd.typed_exec = true;  // a trusted layer's declaration, as a person's typed command
  MOAT_ASSIGN_OR_RETURN(auto client, start_moatd("", moatd));
  WelcomeError why;
  MOAT_TRY(client->hello(workspace, /*headless=*/true, &why, sandbox::NetworkRequest::kOff,
                         std::move(binds)));
  return client;
}

// Starts `s` in a fresh session of a private moatd: its argv as an exec frame whose stdin and
// stdout are pipes this side speaks MCP on (its stderr is ours).
Probe probe(const McpArgs& a, const std::string& workspace, const policy::McpServerConfig& s) {
  Probe p;
  if (s.argv.empty()) {
    p.error = "an HTTP server (url) is not started by moat yet";
    return p;
  }
  auto client = session_for(a, workspace, s);
  auto in = sys::make_pipe();
  auto out = sys::make_pipe();
  if (!client || !in || !out) {
    p.error = (!client ? client.error() : !in ? in.error() : out.error()).message();
    return p;
  }
  sandbox::ExecMsg m{"mcp-" + s.name, s.argv, "", server_env(s), kProbeTimeoutS};
  const int stdio[3] = {in->first.get(), out->second.get(), STDERR_FILENO};
  tools::ToolResult result;
  std::stop_source ended;
  std::thread exec([&] {
    result = (*client)->exec(m, stdio);
    ended.request_stop();
  });
  speak(p, s.name, std::move(in->second), std::move(out->first), ended.get_token());
  exec.join();
  client->reset();  // bye: the private moatd writes session.end and exits
  if (!p.started && result.is_error) p.error += "; the exec: " + result_text(result);
  return p;
}

// One tool as listed: the name the model would call, or why it is not offered, and its decision.
json tool_json(const policy::Policy& policy, const std::string& server, const mcp::ToolInfo& t) {
  const std::string rule_name = mcp::policy_tool_name(server, t.name);
  json annotations = json::object();
  if (t.annotations.read_only) annotations["readOnlyHint"] = *t.annotations.read_only;
  if (t.annotations.destructive) annotations["destructiveHint"] = *t.annotations.destructive;
  const policy::Decision d = policy.decide_tool(rule_name, json::object(),
                                                policy::tool_hints(annotations));
  json out = {{"name", t.name}, {"policy_name", rule_name}, {"decision", policy::verdict_name(d.verdict)},
              {"rule", d.deciding.id}, {"description", t.description}};
  auto model = mcp::model_tool_name(server, t.name);
  if (model) out["model_name"] = *model;
  else out["not_offered"] = model.error().message();
  return out;
}

json server_json(const Listed& l) {
  const auto& c = l.config;
  json j = {{"name", c.name},   {"layer", c.layer}, {"source", where(c.pos)},
            {"trusted", l.trusted}, {"start", c.start}, {"env", c.env}, {"read", c.read}};
  if (!c.argv.empty()) j["command"] = c.argv;
  if (!c.url.empty()) j["url"] = c.url;
  if (!l.skipped.empty()) j["skipped"] = l.skipped;
  return j;
}

void add_probe(json& j, const policy::Policy& policy, const Probe& p, const std::string& name) {
  j["started"] = p.started;
  if (!p.error.empty()) j["error"] = p.error;
  if (!p.started) return;
  j["server_info"] = {{"name", p.info.name}, {"version", p.info.version},
                      {"protocol_version", p.info.protocol_version}};
  j["tools"] = json::array();
  for (const auto& t : p.tools) j["tools"].push_back(tool_json(policy, name, t));
}

std::string text_of(const json& j, const char* key) { return visible(j.value(key, "")); }

void print_tools(const json& tools) {
  for (const auto& t : tools) {
    const std::string shown = t.contains("model_name") ? t["model_name"] : t["name"];
    std::printf("    %-5s %-44s %s%s\n", text_of(t, "decision").c_str(), visible(shown).c_str(),
                text_of(t, "rule").c_str(),
                t.contains("not_offered") ? ("  not offered: " + text_of(t, "not_offered")).c_str()
                                          : "");
  }
}

// One server a paragraph: name, layer, trust, source; its command; why it does not run or did
// not start; its tools with their decisions. Server text is untrusted: visible() shows it.
void print_text(const json& servers) {
  for (const auto& s : servers) {
    const std::string what =
        s.contains("command") ? shell_join(s["command"].get<std::vector<std::string>>())
                              : s.value("url", "");
    std::printf("%-16s %-8s %-9s %s\n    %s\n", text_of(s, "name").c_str(), text_of(s, "layer").c_str(),
                s["trusted"].get<bool>() ? "trusted" : "untrusted", text_of(s, "source").c_str(),
                visible(what).c_str());
    if (s.contains("skipped")) std::printf("    not run: %s\n", text_of(s, "skipped").c_str());
    if (s.contains("error")) std::printf("    did not start: %s\n", text_of(s, "error").c_str());
    print_tools(s.value("tools", json::array()));
  }
}

// Every declared server, trusted (from the loaded policy) then the untrusted repository's.
std::vector<Listed> declared(const policy::Policy& p, const policy::LoadOptions& o,
                             std::vector<std::string>* notes) {
  std::vector<Listed> out;
  for (const auto& c : p.mcp_servers()) out.push_back({c, true, ""});
  auto trust = policy::project_trust(o.workspace, o.trust_dir);
  if (!trust) notes->push_back(trust.error().message());
  else if (trust->state == policy::TrustState::kUntrusted ||
           trust->state == policy::TrustState::kChanged)
    for (auto& l : untrusted_servers(*trust, notes)) out.push_back(std::move(l));
  return out;
}

struct Loaded {
  std::string workspace;
  std::unique_ptr<policy::Policy> policy;
  std::vector<Listed> servers;
};

Result<Loaded> load(const McpArgs& a) {
  Loaded l;
  MOAT_ASSIGN_OR_RETURN(l.workspace, workspace_of(a));
  const policy::LoadOptions o = load_options(a, l.workspace);
  MOAT_ASSIGN_OR_RETURN(l.policy, policy::Policy::load(o));
  std::vector<std::string> notes = l.policy->notices();
  l.servers = declared(*l.policy, o, &notes);
  for (const auto& n : notes) std::fprintf(stderr, "notice: %s\n", visible(n).c_str());
  return l;
}

void print(const McpArgs& a, const json& servers) {
  if (a.json)
    std::printf("%s\n", dump_lossless(json({{"servers", servers}}), 2).c_str());
  else
    print_text(servers);
}

void add_list(CLI::App* group, int& exit_code) {
  auto a = std::make_shared<McpArgs>();
  auto* cmd = group->add_subcommand(
      "list", "The MCP servers every layer declares, trusted or not, with their source file:line "
              "and, for those a session would run, their tools and the decision each would get");
  set_exit_codes(*cmd, {kExitDone, kExitUsage});
  add_flags(cmd, *a);
  cmd->add_flag("--no-start", a->no_start, "Only what the layers declare: start no server");
  cmd->callback([a, &exit_code] {
    auto l = load(*a);
    if (!l) {
      std::fprintf(stderr, "moat mcp list: %s\n", l.error().message().c_str());
      exit_code = kExitUsage;
      return;
    }
    json servers = json::array();
    for (const auto& s : l->servers) {
      servers.push_back(server_json(s));
      if (s.trusted && !a->no_start)
        add_probe(servers.back(), *l->policy, probe(*a, l->workspace, s.config), s.config.name);
    }
    print(*a, servers);
  });
}

void add_test(CLI::App* group, int& exit_code) {
  auto a = std::make_shared<McpArgs>();
  auto* cmd = group->add_subcommand(
      "test", "Start one MCP server in a sandbox through moatd, initialize it, list its tools "
              "with the decision each would get, and end it");
  cmd->footer(
      "Exit codes: 0 the server started and listed its tools, 1 it did not (the reason is "
      "printed), 2 usage or configuration error (no such server, or it would not run).");
  add_flags(cmd, *a);
  cmd->add_option("name", a->name, "The server's name ([[mcp.server]] name)")->required();
  cmd->callback([a, &exit_code] {
    auto l = load(*a);
    const Listed* found = nullptr;
    if (l)
      for (const auto& s : l->servers)
        if (s.config.name == a->name && found == nullptr) found = &s;
    std::string why = !l ? l.error().message()
                      : found == nullptr ? "no layer declares a server named " + moat::quoted(a->name) +
                                               " (moat mcp list --no-start shows them)"
                      : !found->trusted ? moat::quoted(a->name) + " is not run: " + found->skipped
                                        : "";
    if (!why.empty()) {
      std::fprintf(stderr, "moat mcp test: %s\n", why.c_str());
      exit_code = kExitUsage;
      return;
    }
    json server = server_json(*found);
    const Probe p = probe(*a, l->workspace, found->config);
    add_probe(server, *l->policy, p, found->config.name);
    print(*a, json::array({server}));
    exit_code = p.started ? kExitDone : kExitTaskFailed;
  });
}

}  // namespace

void add_mcp_commands(CLI::App& app, int& exit_code) {
  auto* group = app.add_subcommand("mcp", "List and test the MCP servers the policy declares (docs/mcp.md)");
  group->require_subcommand(1);
  set_group_exit_codes(*group);
  add_list(group, exit_code);
  add_test(group, exit_code);
}

}  // namespace moat::agent
