// agent/cli_policy.cc: `moat policy lint|test|list|explain|trust`.
#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "agent/cli.h"
#include "agent/visible.h"
#include "base/byte_strings.h"
#include "base/log.h"
#include "base/moat_dirs.h"
#include "policy/ceilings.h"
#include "policy/explain.h"
#include "policy/layer.h"
#include "policy/lint.h"
#include "policy/network.h"
#include "policy/policy.h"
#include "tools/mcp_names.h"

namespace moat::agent {
namespace {

using nlohmann::json;

// `policy explain` exits 3 when a person would be asked (its footer says so).
constexpr int kExplainAsk = 3;

// Where the layers come from. Every directory has a flag and an environment variable so
// tests and people trying a policy never need to touch /etc.
struct PolicyFlags {
  std::string system_dir;
  std::string user_dir;
  std::string workspace;
  std::string trust_dir;
  std::vector<std::string> files;
  bool trust_project = false;
  bool no_default = false;
  bool headless = false;

  void add_to(CLI::App* cmd) {
    add_policy_dir_options(
        *cmd, system_dir, user_dir,
        "System (organisation) layer directory [env MOAT_POLICY_DIR, default /etc/moat/policy.d]",
        "User layer directory [env MOAT_USER_POLICY_DIR, default $XDG_CONFIG_HOME/moat/policy.d]");
    cmd->add_option("--workspace,-C", workspace,
                    "Workspace (project layer, $WORKSPACE) [default: cwd]");
    cmd->add_option("--trust-dir", trust_dir, "Where project trust pins live [env MOAT_TRUST_DIR]");
    cmd->add_option("--policy", files, "An extra policy file that may only narrow (repeatable)");
    cmd->add_flag("--trust-project", trust_project,
                  "Accept (and pin) the project policy's current hash");
    cmd->add_flag("--no-default-policy", no_default, "Leave out the built-in default policy");
  }

  policy::LoadOptions options() const {
    policy::LoadOptions o;
    // The same directories a run's moatd loads (base/moat_dirs.h): explain and a run agree.
    o.system_dir = dirs::or_default(system_dir, dirs::system_policy());
    o.user_dir = dirs::or_default(user_dir, dirs::user_policy());
    o.trust_dir = dirs::or_default(trust_dir, dirs::trust());
    if (workspace.empty()) {
      char buf[4096];
      o.workspace = ::getcwd(buf, sizeof buf) ? buf : ".";
    } else {
      o.workspace = workspace;
    }
    o.extra_files = files;
    o.trust_project = trust_project;
    o.use_builtin_default = !no_default;
    o.headless = headless;
    return o;
  }
};

// The ceilings with the layer that set each; the layers loaded already once (load_or_report).
std::vector<policy::CeilingSource> ceiling_sources(const policy::LoadOptions& options) {
  auto layers = policy::load_layers(options, nullptr);
  return layers ? policy::ceiling_sources(*layers) : std::vector<policy::CeilingSource>{};
}

std::unique_ptr<policy::Policy> load_or_report(const PolicyFlags& flags, int& exit_code) {
  auto p = policy::Policy::load(flags.options());
  if (!p) {
    std::fprintf(stderr, "moat policy: %s\n", p.error().message().c_str());
    exit_code = kExitUsage;
    return nullptr;
  }
  for (const auto& n : (*p)->notices()) std::fprintf(stderr, "notice: %s\n", n.c_str());
  return std::move(*p);
}

// Shell-quotes one argv word, so `explain -- sh -c 'a && b'` keeps its meaning.
std::string shell_quote(const std::string& s) {
  if (!s.empty() &&
      s.find_first_not_of(
          "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%") ==
          std::string::npos)
    return s;
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

void add_lint(CLI::App* policy_cmd, int& exit_code) {
  auto flags = std::make_shared<PolicyFlags>();
  auto* cmd = policy_cmd->add_subcommand(
      "lint", "Check schema, unknown keys, ownership and unreachable rules");
  // Its own meanings, not the generic ones (issue 27 item 20): scripts gate on 1 vs 2.
  cmd->footer(
      "Exit codes: 0 no error and no warning, 1 warnings only, 2 an error in a policy file "
      "(or in the command line).");
  flags->add_to(cmd);
  cmd->callback([flags, &exit_code] {
    int errors = 0, warnings = 0;
    for (const auto& f : policy::lint_policy(flags->options())) {
      errors += f.severity == "error";
      warnings += f.severity == "warning";
      std::printf("%s: %s%s\n", f.severity.c_str(), f.where.empty() ? "" : (f.where + ": ").c_str(),
                  f.message.c_str());
    }
    std::printf("%d error(s), %d warning(s)\n", errors, warnings);
    exit_code = errors > 0 ? kExitUsage : warnings > 0 ? kExitTaskFailed : kExitDone;
  });
}

void add_test(CLI::App* policy_cmd, int& exit_code) {
  auto flags = std::make_shared<PolicyFlags>();
  auto* cmd =
      policy_cmd->add_subcommand("test", "Run every rule's tests.match and tests.not_match");
  set_exit_codes(*cmd, {kExitDone, kExitTaskFailed, kExitUsage});
  flags->add_to(cmd);
  cmd->callback([flags, &exit_code] {
    auto p = load_or_report(*flags, exit_code);
    if (!p) return;
    int pass = 0, failed = 0, skipped = 0;
    for (const auto& r : policy::run_rule_tests(*p, flags->options().workspace)) {
      if (r.outcome == "pass") {
        ++pass;
        continue;
      }
      (r.outcome == "fail" ? failed : skipped)++;
      std::printf("%s  %s (%s)  %s %s: %s\n", r.outcome == "fail" ? "FAIL" : "skip", r.rule.c_str(),
                  r.where.c_str(), r.expect_match ? "match" : "not_match",
                  shell_quote(r.input).c_str(), r.detail.c_str());
    }
    std::printf("%d passed, %d failed, %d skipped\n", pass, failed, skipped);
    exit_code = failed > 0 ? kExitTaskFailed : kExitDone;
  });
}

void add_list(CLI::App* policy_cmd, int& exit_code) {
  auto flags = std::make_shared<PolicyFlags>();
  auto as_json = std::make_shared<bool>(false);
  auto* cmd = policy_cmd->add_subcommand("list", "Effective rules with their layer and file:line");
  set_exit_codes(*cmd, {kExitDone, kExitUsage});
  flags->add_to(cmd);
  cmd->add_flag("--json", *as_json, "Print JSON");
  cmd->callback([flags, as_json, &exit_code] {
    auto p = load_or_report(*flags, exit_code);
    if (!p) return;
    json rules = p->rules_json();
    const auto ceilings = ceiling_sources(flags->options());
    if (*as_json) {
      json sources = json::array();
      for (const auto& c : ceilings)
        sources.push_back({{"key", c.key}, {"value", c.value}, {"layer", c.layer}, {"file", c.file}});
      // Lossless (base/byte_strings.h): a layer's file path need not be UTF-8.
      std::printf("%s\n", dump_lossless(json({{"layers", p->layers_json()},
                                              {"policy_hash", p->policy_hash()},
                                              {"resources", p->resources().to_json()},
                                              {"resource_sources", sources},
                                              {"rules", rules}}),
                                        2)
                              .c_str());
      return;
    }
    for (const auto& l : p->layers_json())
      std::printf("layer  %-8s %-20s rev %-10s %s\n", l["layer"].get<std::string>().c_str(),
                  l["name"].get<std::string>().c_str(), l["revision"].get<std::string>().c_str(),
                  l["file"].get<std::string>().c_str());
    // Each ceiling with the layer that set it (issue 27 item 7): a raised or lowered limit shows.
    for (const auto& c : ceilings)
      std::printf("resource %-20s %-8s %-8s %s\n", c.key.c_str(),
                  policy::format_ceiling(c.key, c.value).c_str(),
                  c.layer.empty() ? "default" : c.layer.c_str(),
                  c.file.empty() ? "policy/schema.h" : c.file.c_str());
    for (const auto& r : rules) {
      std::string where =
          r["file"].get<std::string>().empty()
              ? "-"
              : r["file"].get<std::string>() + ":" + std::to_string(r["line"].get<int>());
      std::printf("%-8s %-5s %-32s %-8s %s%s\n", r["kind"].get<std::string>().c_str(),
                  r["decision"].get<std::string>().c_str(), r["id"].get<std::string>().c_str(),
                  r["layer"].get<std::string>().c_str(), where.c_str(),
                  r["ignored"].get<bool>() ? "  (ignored)" : "");
    }
    std::printf("policy_hash %s\n", p->policy_hash().c_str());
  });
}

// `policy explain`'s own exit codes (issue 27 item 20): the verdict, so a CI step can gate on it.
// An ask is neither: it stops an unattended run (--headless makes it a deny, 1).
int explain_exit_code(policy::Verdict v) {
  return v == policy::Verdict::kAllow ? kExitDone
         : v == policy::Verdict::kDeny ? kExitTaskFailed
                                       : kExplainAsk;
}

// --network HOST:PORT ("example.com:443", "10.0.0.5:5432", "[::1]:8080"): the host as the
// proxy judges it (policy/network.h) and a port from 1 to 65535.
Result<std::pair<std::string, int>> parse_host_port(const std::string& text) {
  const std::string usage = "--network " + moat::quoted(text) +
                            ": give HOST:PORT, a host name or IP address and a port from 1 to "
                            "65535 (e.g. example.com:443, 10.0.0.5:5432, [::1]:8080)";
  const std::size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0) return fail(usage);
  std::string host = text.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  else if (host.find(':') != std::string::npos)
    return fail(usage);  // an IPv6 address needs its brackets: "[::1]:8080"
  int port = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data() + colon + 1, end, port);
  if (ec != std::errc() || ptr != end || port < 1 || port > 65535 || colon + 1 == text.size())
    return fail(usage);
  if (!policy::normalize_host(host)) return fail(usage);
  return std::make_pair(host, port);
}

struct ExplainArgs {
  PolicyFlags flags;
  bool json = false;
  std::string path, access = "read", tool, args, cwd, network;
  std::vector<std::string> words;
};

// --tool as the policy names it: "mcp__S__T" (the model's name) becomes "mcp:S:T"; --args, a
// JSON object, the call's arguments. The input shown is the tool, a space and the arguments.
Result<std::pair<policy::Decision, std::string>> explain_tool(const ExplainArgs& a,
                                                              const policy::Policy& p) {
  std::string tool = a.tool;
  if (auto ref = tools::mcp::parse_tool_name(tool))
    tool = tools::mcp::policy_tool_name(ref->server, ref->tool);
  else if (tools::mcp::is_model_tool_name(tool) || tool.starts_with(tools::mcp::kPolicyPrefix))
    return fail("--tool: '" + tool +
                "' is not an MCP tool name: expected mcp__SERVER__TOOL or mcp:SERVER:TOOL, "
                "SERVER of 1 to 32 of A-Z a-z 0-9 _ - without \"__\"");
  json args = json::object();
  if (!a.args.empty()) {
    args = json::parse(a.args, nullptr, /*allow_exceptions=*/false);
    if (args.is_discarded() || !args.is_object())
      return fail("--args: expected the call's arguments as a JSON object, e.g. "
                  "'{\"path\": \"/workspace/a\"}'; got '" + a.args + "'");
  }
  const std::string input = a.args.empty() ? tool : tool + " " + args.dump();
  return std::make_pair(p.decide_tool(tool, args, {}), input);
}

// The decision `explain` shows, and the input it names; an error for a bad --network.
Result<std::pair<policy::Decision, std::string>> explain_decision(const ExplainArgs& a,
                                                                  const policy::Policy& p) {
  if (!a.path.empty()) {
    auto access = a.access == "write"  ? policy::Access::kWrite
                  : a.access == "exec" ? policy::Access::kExec
                                       : policy::Access::kRead;
    return std::make_pair(p.decide_path(p.expand_path(a.path), access), a.path);
  }
  if (!a.tool.empty()) return explain_tool(a, p);
  if (!a.args.empty()) return fail("--args goes with --tool");
  if (!a.network.empty()) {
    MOAT_ASSIGN_OR_RETURN(auto hp, parse_host_port(a.network));
    return std::make_pair(p.decide_network(hp.first, hp.second), a.network);
  }
  if (a.words.empty()) return fail("give a shell line, --path, --tool or --network");
  std::string input = a.words.size() == 1 ? a.words[0] : "";
  if (a.words.size() > 1)
    for (const auto& w : a.words) input += (input.empty() ? "" : " ") + shell_quote(w);
  return std::make_pair(
      p.decide_command(input, a.cwd.empty() ? a.flags.options().workspace : a.cwd), input);
}

void add_explain(CLI::App* policy_cmd, int& exit_code) {
  auto a = std::make_shared<ExplainArgs>();
  auto* cmd = policy_cmd->add_subcommand(
      "explain", "Show how a shell line, path, tool or network connection is decided");
  cmd->footer(
      "Exit codes: 0 allow, 1 deny, 2 usage or configuration error, 3 ask (a person would be "
      "asked; with --headless an ask is a deny, 1).");
  a->flags.add_to(cmd);
  cmd->add_flag("--json", a->json, "Print JSON");
  cmd->add_flag("--headless", a->flags.headless, "Decide as a headless run (ask becomes deny)");
  cmd->add_option("--path", a->path, "Explain a path access instead of a shell line");
  cmd->add_option("--access", a->access, "Access for --path")
      ->check(CLI::IsMember({"read", "write", "exec"}));
  cmd->add_option("--tool", a->tool,
                  "Explain a tool call instead of a shell line (an MCP tool as mcp__SERVER__TOOL "
                  "or mcp:SERVER:TOOL)");
  cmd->add_option("--args", a->args,
                  "The tool call's arguments, a JSON object, for [[tool]] rules' args conditions");
  cmd->add_option("--network", a->network,
                  "Explain a connection to HOST:PORT instead of a shell line (e.g. "
                  "pypi.org:443, [::1]:8080)");
  cmd->add_option("--cwd", a->cwd, "Working directory of the shell line [default: the workspace]");
  cmd->add_option("line", a->words, "The shell line (one argument), or an argv after --");
  cmd->callback([a, &exit_code] {
    auto p = load_or_report(a->flags, exit_code);
    if (!p) return;
    auto decided = explain_decision(*a, *p);
    if (!decided) {
      std::fprintf(stderr, "moat policy explain: %s\n", decided.error().message().c_str());
      exit_code = kExitUsage;
      return;
    }
    const auto& [d, input] = *decided;
    if (a->json) {
      // The line's words are host bytes (`echo $'\xff'` judges the byte 0xff): a word that is
      // not UTF-8 is printed as {"bytes": base64}, as in the audit log, never a crash.
      std::printf("%s\n", dump_lossless(policy::explain_json(d, *p, input), 2).c_str());
    } else {
      // The line and the rules' reasons are shown to a person: no escape sequence acts.
      std::fputs(visible(policy::explain_text(d, *p, input)).c_str(), stdout);
    }
    exit_code = explain_exit_code(d.verdict);
  });
}

// Pins the project policy's current SHA-256 without a prompt (CI, scripted setups), or
// removes the pin. moatd loads the project layer only while the file still has that hash.
void add_trust(CLI::App* parent, int& exit_code) {
  struct Args {
    std::string workspace, trust_dir;
    bool revoke = false;
  };
  auto a = std::make_shared<Args>();
  auto* cmd = parent->add_subcommand(
      "trust",
      "Trust the workspace's .moat/policy.toml: pin its current SHA-256 (or --revoke the pin)");
  set_exit_codes(*cmd, {kExitDone, kExitUsage});
  cmd->add_option("--workspace,-C", a->workspace, "Workspace [default: cwd]");
  cmd->add_option("--trust-dir", a->trust_dir,
                  "Where pins live [env MOAT_TRUST_DIR, default $XDG_STATE_HOME/moat/trust]");
  cmd->add_flag(
      "--revoke", a->revoke,
      "Remove the pin: headless runs skip the project policy, interactive ones ask again");
  cmd->callback([a, &exit_code] {
    char buf[4096];
    const std::string ws = !a->workspace.empty()       ? a->workspace
                           : ::getcwd(buf, sizeof buf) ? buf
                                                       : ".";
    const std::string dir = !a->trust_dir.empty() ? a->trust_dir : policy::default_trust_dir();
    if (a->revoke) {
      if (auto r = policy::revoke_project(ws, dir); !r) {
        std::fprintf(stderr, "moat policy trust: %s\n", r.error().message().c_str());
        exit_code = kExitUsage;
        return;
      }
      std::printf("revoked: the project policy of %s is no longer trusted\n", ws.c_str());
      return;
    }
    auto t = policy::project_trust(ws, dir);
    if (t && t->state == policy::TrustState::kNoProjectPolicy) {
      std::fprintf(stderr,
                   "moat policy trust: %s has no .moat/policy.toml, .mcp.json or "
                   ".vscode/mcp.json\n",
                   ws.c_str());
      exit_code = kExitUsage;
      return;
    }
    Result<void> pinned =
        t ? policy::pin_project(ws, dir, t->sha256) : Result<void>(fail(t.error()));
    if (!pinned) {
      std::fprintf(stderr, "moat policy trust: %s\n", pinned.error().message().c_str());
      exit_code = kExitUsage;
      return;
    }
    std::printf("trusted: %s\n  sha256 %s\n  pinned in %s\n", policy::project_files(*t).c_str(),
                t->sha256.c_str(), dir.c_str());
  });
}

}  // namespace

void add_policy_commands(CLI::App& app, int& exit_code) {
  auto* policy_cmd = app.add_subcommand("policy", "Check, test and explain policies");
  policy_cmd->require_subcommand(1);
  set_group_exit_codes(*policy_cmd);
  add_lint(policy_cmd, exit_code);
  add_test(policy_cmd, exit_code);
  add_list(policy_cmd, exit_code);
  add_explain(policy_cmd, exit_code);
  add_trust(policy_cmd, exit_code);
}

}  // namespace moat::agent
