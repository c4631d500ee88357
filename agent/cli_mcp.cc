// agent/cli_mcp.cc: `moat mcp list|test`: the MCP servers the policy layers declare, trusted or
// not, and a server started in a sandbox through moatd, initialized, its tools listed with the
// decision each would get (docs/mcp.md).
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
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
#include "sessions/jsonl.h"
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
  std::string call;       // test --call: a tool to call once listed (its name or mcp__S__T)
  std::string call_args = "{}";
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
  mcp::ServerInfo info;              // a stdio server's initialize answer
  std::vector<mcp::ToolInfo> tools;  // a stdio server's tools/list
  json hosted_tools;                 // a url server's, as moatd's welcome reports them
  json proxy;                        // a url server's: the proxy's decision on its connection
  json call;                         // --call's result, or why it was refused
};

// What moatd's session takes: the --call tool and its arguments.
struct CallRequest {
  std::string tool;  // as the server names it
  json args;
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


struct Loaded {
  std::string workspace;
  std::unique_ptr<policy::Policy> policy;
  std::vector<Listed> servers;
};

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

json tool_annotations(const mcp::ToolInfo& t) {
  json annotations = json::object();
  if (t.annotations.read_only) annotations["readOnlyHint"] = *t.annotations.read_only;
  if (t.annotations.destructive) annotations["destructiveHint"] = *t.annotations.destructive;
  return annotations;
}

// Talks MCP to the server on `to`/`from` while moatd runs it: initialize, tools/list, close. `ended` stops the waits when the server's exec has ended (refused,
// crashed) before answering.
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

struct Session {
  std::unique_ptr<MoatdClient> client;
  Welcome welcome;
};

// A private moatd's headless session for `s`: its `read` directories bound; the network as
// `network` asks; the person's variables the trusted servers name, as `moat run` sends them.
Result<Session> session_for(const McpArgs& a, const Loaded& l, const policy::McpServerConfig& s,
                            sandbox::NetworkRequest network) {
  MOAT_ASSIGN_OR_RETURN(auto binds, read_binds(s));
  MoatdPassThrough moatd = a.moatd;
  moatd.typed_exec = true;  // a trusted layer's declaration, as a person's typed command
  Session out;
  MOAT_ASSIGN_OR_RETURN(out.client, start_moatd("", moatd));
  out.client->set_hello_env(policy::person_env(l.policy->mcp_servers()));
  WelcomeError why;
  MOAT_ASSIGN_OR_RETURN(out.welcome, out.client->hello(l.workspace, /*headless=*/true, &why,
                                                       network, std::move(binds)));
  return out;
}

// A stdio server started in a fresh session of a private moatd without network: its argv as
// an exec frame whose stdin and stdout are pipes this side speaks MCP on (its stderr is ours),
// with the person's variables only a system or user layer's declaration names.
Probe probe_stdio(const McpArgs& a, const Loaded& l, const policy::McpServerConfig& s) {
  Probe p;
  auto session = session_for(a, l, s, sandbox::NetworkRequest::kOff);
  auto in = sys::make_pipe();
  auto out = sys::make_pipe();
  if (!session || !in || !out) {
    p.error = (!session ? session.error() : !in ? in.error() : out.error()).message();
    return p;
  }
  sandbox::ExecMsg m{"mcp-" + s.name, s.argv, "", policy::person_env({s}), kProbeTimeoutS};
  const int stdio[3] = {in->first.get(), out->second.get(), STDERR_FILENO};
  tools::ToolResult result;
  std::stop_source ended;
  std::thread exec([&] {
    result = session->client->exec(m, stdio);
    ended.request_stop();
  });
  speak(p, s.name, std::move(in->second), std::move(out->first), ended.get_token());
  exec.join();
  session->client.reset();  // bye: the private moatd writes session.end and exits
  if (!p.started && result.is_error) p.error += "; the exec: " + result_text(result);
  return p;
}

// The proxy's decision on a url server's connections: its first `net` record in the session's
// audit log (each names the server), read once the session ended.
json proxy_decision(const std::string& audit, const std::string& server) {
  auto data =
      audit.empty() ? Result<std::string>(fail("no audit log")) : sessions::read_file(audit);
  if (!data) return nullptr;
  for (const sessions::Line& line : sessions::whole_lines(*data)) {
    const json r = json::parse(line.text, nullptr, false);
    if (r.is_object() && r.value("type", "") == "net" && r.value("mcp_server", "") == server)
      return {{"host", r.value("host", "")}, {"port", r.value("port", 0)},
              {"decision", r.value("decision", "")}, {"rule", r.value("rule", "")}};
  }
  return nullptr;
}

// A url server's status and tools as moatd's session reports them (welcome.mcp_servers, the
// tools' descriptions from welcome.tools).
void take_status(Probe& p, const Welcome& w, const std::string& server) {
  const sandbox::McpServerStatus* st = nullptr;
  for (const auto& s : w.mcp_servers)
    if (s.name == server) st = &s;
  if (st == nullptr) return void(p.error = "mcp server " + server + ": not in moatd's session");
  p.started = st->state != "failed";
  p.error = st->error;
  p.hosted_tools = json::array();
  for (const auto& t : st->tools) {
    auto ref = mcp::parse_tool_name(t.name);
    json row = {{"name", ref ? ref->tool : t.name},
                {"model_name", t.name},
                {"decision", t.decision}};
    for (const auto& spec : w.tools)
      if (spec.name == t.name) row["description"] = spec.description;
    p.hosted_tools.push_back(std::move(row));
  }
}

// --call: a call frame to moatd's session, which decides it (headless: an ask is refused),
// records it and calls the server.
json call_hosted(MoatdClient& client, const Probe& p, const std::string& server,
                 const CallRequest& c) {
  auto model = mcp::model_tool_name(server, c.tool);
  const std::string tool = mcp::policy_tool_name(server, c.tool);
  if (!model) return {{"tool", tool}, {"refused", model.error().message()}};
  for (const json& t : p.hosted_tools)
    if (t.value("model_name", "") == *model && t.value("decision", "") == "deny")
      return {{"tool", tool}, {"refused", "the policy's decision is deny: the session does not "
                                          "offer it (moat mcp test NAME shows its rule)"}};
  const tools::ToolResult r = client.call("mcp-test-call", *model, c.args, nullptr, {});
  return {{"tool", tool}, {"result", r.to_json()}};
}

// A server started by moatd's own host in a headless session of a private moatd, read from the
// welcome's status. A url server gets the network the policy's [[network]] rules grant (the
// connection goes through the session's proxy; its decision is read from the audit log after),
// a stdio server none.
Probe probe_hosted(const McpArgs& a, const Loaded& l, const policy::McpServerConfig& s,
                   const CallRequest* call) {
  Probe p;
  auto session = session_for(a, l, s,
                             s.url.empty() ? sandbox::NetworkRequest::kOff
                                           : sandbox::NetworkRequest::kAsPolicyGrants);
  if (!session) return p.error = session.error().message(), p;
  take_status(p, session->welcome, s.name);
  if (p.started && call != nullptr) p.call = call_hosted(*session->client, p, s.name, *call);
  session->client.reset();  // bye: the private moatd writes session.end and exits
  if (!s.url.empty()) p.proxy = proxy_decision(session->welcome.audit, s.name);
  return p;
}

// A --call goes through moatd's host whatever the transport: moatd decides it and its audit log
// holds the decision and the mcp.call record, as for a model's call (A1's A-1: decided here and
// called on a client of our own, a stdio server's call left no record of either).
Probe probe(const McpArgs& a, const Loaded& l, const policy::McpServerConfig& s,
            const CallRequest* call = nullptr) {
  return s.url.empty() && call == nullptr ? probe_stdio(a, l, s)
                                          : probe_hosted(a, l, s, call);
}

// One tool as listed: the name the model would call, or why it is not offered, and its decision.
json tool_json(const policy::Policy& policy, const std::string& server, const mcp::ToolInfo& t) {
  const std::string rule_name = mcp::policy_tool_name(server, t.name);
  const policy::Decision d = policy.decide_tool(rule_name, json::object(),
                                                policy::tool_hints(tool_annotations(t)));
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
  if (!p.proxy.is_null()) j["proxy"] = p.proxy;
  if (!p.call.is_null()) j["call"] = p.call;
  if (!p.started) return;
  if (!p.hosted_tools.is_null()) return void(j["tools"] = p.hosted_tools);
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

void print_proxy(const json& p) {
  std::printf("    proxy: %s %s:%d (rule %s)\n", text_of(p, "decision").c_str(),
              text_of(p, "host").c_str(), p.value("port", 0), text_of(p, "rule").c_str());
}

// --call's result, its text blocks as the model would read them, escaped.
void print_call(const json& c) {
  if (c.contains("refused"))
    return void(std::printf("    call %s refused: %s\n", text_of(c, "tool").c_str(),
                            text_of(c, "refused").c_str()));
  const tools::ToolResult r = tools::ToolResult::from_json(c.value("result", json::object()));
  std::printf("    call %s%s: %s\n", text_of(c, "tool").c_str(), r.is_error ? " (error)" : "",
              visible(result_text(r)).c_str());
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
    if (s.contains("proxy")) print_proxy(s["proxy"]);
    if (s.contains("error")) std::printf("    did not start: %s\n", text_of(s, "error").c_str());
    print_tools(s.value("tools", json::array()));
    if (s.contains("call")) print_call(s["call"]);
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
        add_probe(servers.back(), *l->policy, probe(*a, *l, s.config), s.config.name);
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
      "Exit codes: 0 the server started and listed its tools (and --call's tool ran without "
      "error), 1 it did not (the reason is printed),"
      " 2 usage or configuration error (no such server, or it would not run).");
  add_flags(cmd, *a);
  cmd->add_option("name", a->name, "The server's name ([[mcp.server]] name)")->required();
  cmd->add_option("--call", a->call,
                  "Then call this tool (as the server names it) once, if the policy allows it "
                  "with --args (an ask is refused: nobody is asked), and print its result");
  cmd->add_option("--args", a->call_args, "--call's arguments, a JSON object [default: {}]");
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
    const json args = json::parse(a->call_args, nullptr, false);
    if (!args.is_object()) {
      std::fprintf(stderr, "moat mcp test: --args %s: expected a JSON object of the tool's "
                           "arguments\n", visible(a->call_args).c_str());
      exit_code = kExitUsage;
      return;
    }
    const CallRequest call{a->call, args};
    const Probe p = probe(*a, *l, found->config, a->call.empty() ? nullptr : &call);
    add_probe(server, *l->policy, p, found->config.name);
    print(*a, json::array({server}));
    const bool call_failed = !p.call.is_null() && (p.call.contains("refused") ||
                                                   p.call["result"].value("isError", true));
    exit_code = p.started && !call_failed ? kExitDone : kExitTaskFailed;
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
