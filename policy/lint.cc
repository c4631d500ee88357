// policy/lint.cc: static checks over the loaded layers, and the rule self-tests.
#include "policy/lint.h"

#include <algorithm>

#include "policy/ceilings.h"
#include "policy/layer.h"
#include "policy/paths.h"
#include "policy/toml_load.h"
#include "policy/writable_roots.h"

namespace moat::policy {
namespace {

using json = nlohmann::json;

std::string where_of(const SourcePos& p) { return p.file + ":" + std::to_string(p.line); }

// A rule with no condition besides its program list matches every use of those programs.
bool unconditional(const CommandRule& r) {
  return r.args.empty() && r.any_flag.empty() && r.all_flags.empty() && r.no_flag.empty() &&
         r.any_arg.empty() && r.any_env.empty() && r.script_paths.empty() &&
         r.unless.any_flag.empty() && r.unless.any_arg.empty() && r.program_paths.empty() &&
         r.sha256.empty();
}

// Every program `a` names is named by `b` (b without programs names all).
bool covers_programs(const CommandRule& b, const CommandRule& a) {
  if (b.program.empty()) return true;
  if (a.program.empty()) return false;
  return std::all_of(a.program.begin(), a.program.end(), [&](const std::string& p) {
    return std::find(b.program.begin(), b.program.end(), p) != b.program.end();
  });
}

// Every rule `a` of one kind that a rule `b` with a stronger verdict always decides first:
// `covers(b, a)` says b matches whatever a matches, and `says(a, b)` words the warning.
// A user allow is not shadowed by the built-in default's ask: it loosens it (policy.cc loosen).
template <typename Rule, typename Covers, typename Says>
void shadowed(const std::vector<LoadedLayer>& layers, std::vector<Rule> PolicyFile::*kind,
              Covers covers, Says says, std::vector<Finding>& out) {
  std::vector<std::pair<const Rule*, const LoadedLayer*>> all;
  for (const auto& l : layers)
    for (const auto& r : l.file.*kind) all.emplace_back(&r, &l);
  for (const auto& [a, a_layer] : all) {
    for (const auto& [b, b_layer] : all) {
      if (a == b || b->decision <= a->decision || !covers(*b, *a)) continue;
      const bool loosened = a->decision == Verdict::kAllow && a_layer->kind == "user" &&
                            b->decision == Verdict::kAsk && b_layer->kind == "builtin";
      if (loosened) continue;
      out.push_back({"warning", where_of(a->pos), says(*a, *b)});
      break;
    }
  }
}

void shadowed_commands(const std::vector<LoadedLayer>& layers, std::vector<Finding>& out) {
  auto covers = [](const CommandRule& b, const CommandRule& a) {
    return unconditional(b) && covers_programs(b, a);
  };
  auto says = [](const CommandRule& a, const CommandRule& b) {
    return "rule " + a.id + " (" + verdict_name(a.decision) + ") can never decide: " + b.id + " (" +
           verdict_name(b.decision) + ", " + where_of(b.pos) + ") matches every command it matches";
  };
  shadowed(layers, &PolicyFile::command, covers, says, out);
}

void shadowed_tools(const std::vector<LoadedLayer>& layers, std::vector<Finding>& out) {
  auto covers = [](const ToolRule& b, const ToolRule& a) {
    if (!b.unless.tool.empty() || !b.unless.server.empty()) return false;
    return std::all_of(a.tool.begin(), a.tool.end(), [&](const std::string& t) {
      return std::find(b.tool.begin(), b.tool.end(), t) != b.tool.end() ||
             std::find(b.tool.begin(), b.tool.end(), "*") != b.tool.end();
    });
  };
  auto says = [](const ToolRule& a, const ToolRule& b) {
    return "rule " + a.id + " can never decide: " + b.id + " (" + verdict_name(b.decision) +
           ") matches every tool it matches";
  };
  shadowed(layers, &PolicyFile::tool, covers, says, out);
}

bool in_matched(const Decision& d, const json& rule) {
  return std::any_of(d.matched.begin(), d.matched.end(), [&](const RuleRef& m) {
    return m.id == rule["id"].get<std::string>() && m.file == rule["file"].get<std::string>() &&
           m.layer == rule["layer"].get<std::string>();
  });
}

// A test line whose program is not installed cannot show an allow rule matching.
std::string missing_program(const Decision& d) {
  const json detail = d.detail();
  if (!detail.is_object()) return {};
  for (const auto& u : detail.value("units", json::array()))
    if (u.contains("program") && u["program"].is_null()) return u.value("argv", "");
  return {};
}

// The writable root (writable_roots.h) the person's home lies under when a test input names
// the home (~ or $HOME), else "". The sandbox's /tmp is its own, so there a rule that lets it
// write /tmp also matches "~/.bashrc" and the test says nothing about the person's home.
std::string home_root_of(const Policy& policy, const std::string& input) {
  if (input != "~" && input.rfind("~/", 0) != 0 && input.rfind("$HOME", 0) != 0) return "";
  const std::string home = policy.expand_path("~");
  for (std::string_view root : kSystemWritableRoots)
    if (is_under(home, root)) return std::string(root);
  return "";
}

}  // namespace

std::vector<Finding> lint_policy(const LoadOptions& options) {
  std::vector<Finding> out;
  std::vector<std::string> notices;
  auto layers = load_layers(options, &notices);
  if (!layers) {
    out.push_back({"error", "", layers.error().message()});
    return out;
  }
  auto policy = build_policy(*layers, options, notices);
  if (!policy) {
    out.push_back({"error", "", policy.error().message()});
    return out;
  }
  for (const auto& n : (*policy)->notices()) out.push_back({"notice", "", n});
  for (const auto& r : (*policy)->rules_json()) {
    if (!r.value("ignored", false)) continue;
    std::string why = r["layer"] == "cli" ? "command-line policy files may only narrow"
                                          : "the organisation's managed_allows_only covers " +
                                                r["kind"].get<std::string>();
    out.push_back({"warning",
                   r["file"].get<std::string>() + ":" + std::to_string(r["line"].get<int>()),
                   "allow rule " + r["id"].get<std::string>() + " is ignored: " + why});
  }
  shadowed_commands(*layers, out);
  shadowed_tools(*layers, out);
  // A ceiling that a stricter layer overrides silently did nothing (issue 27 item 7).
  for (const auto& idle : idle_ceilings(*layers)) out.push_back({"warning", idle.file, idle.message});
  return out;
}

std::vector<RuleTestResult> run_rule_tests(const Policy& policy, const std::string& cwd) {
  std::vector<RuleTestResult> out;
  for (const auto& rule : policy.rules_json()) {
    if (!rule.contains("tests")) continue;
    const std::string kind = rule["kind"];
    const std::string where =
        rule["file"].get<std::string>() + ":" + std::to_string(rule["line"].get<int>());
    for (const char* which : {"match", "not_match"}) {
      for (const auto& t : rule["tests"][which]) {
        RuleTestResult r{rule["id"], where, t.get<std::string>(), std::string(which) == "match",
                         "pass",     ""};
        if (rule.value("ignored", false)) {
          r.outcome = "skip";
          r.detail = "the rule is ignored in this configuration";
          out.push_back(std::move(r));
          continue;
        }
        Decision d;
        if (kind == "command") {
          d = policy.decide_command(r.input, cwd);
        } else if (kind == "path") {
          std::string access = rule["match"]["access"][0];
          d = policy.decide_path(policy.expand_path(r.input), access == "read"    ? Access::kRead
                                                              : access == "write" ? Access::kWrite
                                                                                  : Access::kExec);
        } else {
          auto call = parse_tool_test(r.input);  // the loader checked it
          d = call ? policy.decide_tool(call->tool, call->args, {}) : policy.decide_tool(r.input);
        }
        bool hit = in_matched(d, rule);
        if (hit == r.expect_match) {
          out.push_back(std::move(r));
          continue;
        }
        std::string missing = kind == "command" ? missing_program(d) : "";
        std::string home_root = kind == "path" ? home_root_of(policy, r.input) : "";
        if (r.expect_match && !missing.empty() && rule["decision"] == "allow") {
          r.outcome = "skip";
          r.detail = "the program of '" + missing + "' is not installed on the sandbox PATH";
        } else if (!home_root.empty()) {
          r.outcome = "skip";
          r.detail = "~ is " + policy.expand_path("~") + ", under " + home_root +
                     ", which the sandbox writes as its own: run it with a home outside " +
                     home_root;
        } else {
          r.outcome = "fail";
          r.detail = std::string(r.expect_match ? "did not match" : "matched") + "; decision " +
                     verdict_name(d.verdict) + " by " + d.deciding.id;
        }
        out.push_back(std::move(r));
      }
    }
  }
  return out;
}

}  // namespace moat::policy
