// policy/policy.cc: the effective policy: layers combined (deny > ask > allow across all
// layers, strictest defaults, minimum ceilings, organisation constraints) and the decide_*
// entry points moatd calls.
#include "policy/policy.h"

#include <glob.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <span>
#include <unordered_map>

#include "base/check.h"
#include "base/host_defaults.h"
#include "base/moat_dirs.h"
#include "policy/code_env.h"
#include "policy/digest.h"
#include "policy/layer.h"
#include "policy/match.h"
#include "policy/network.h"
#include "policy/paths.h"
#include "policy/resolve.h"
#include "policy/units.h"
#include "policy/writable_roots.h"

namespace moat::policy {
namespace {

using json = nlohmann::json;

// One rule's (or default's) say in a decision. Refs and rule reasons point into the
// compiled policy (it outlives every decision), so a vote costs no string copies.
struct Vote {
  Verdict verdict;
  const RuleRef* ref;
  const std::string* reason = nullptr;  // the rule's own reason
  std::string note;                     // a reason made for this action (defaults, unknown targets)
  bool is_default = false;
  // The person's (user) allow that loosened this built-in default ask for this action
  // (loosen below): the vote stays in `matched` and in explain, but decides nothing.
  const RuleRef* loosened_by = nullptr;
  std::string text() const {
    if (reason == nullptr || reason->empty()) return note;
    return note.empty() ? *reason : note + ": " + *reason;
  }
};

Vote rule_vote(Verdict v, const RuleRef& ref, const std::string& reason) {
  return Vote{v, &ref, &reason, std::string(), false, nullptr};
}

// A rule of the shipped default policy (examples/policies/default.toml), as opposed to moat's
// own builtin.* rules (code-env, network-ip-literal), which are not a starting point but a
// floor, and to the system layer, which binds the person.
bool from_default_policy(const RuleRef& r) {
  return r.layer == "builtin" && r.file == kBuiltinDefaultFile;
}

// A [[rule]] of the person's (user) layer that allows; not a setting of theirs (a default,
// [exec] workspace_programs), which replaces the built-in one instead (compile_defaults).
bool is_user_allow_rule(const Vote& v) {
  return v.verdict == Verdict::kAllow && v.ref->layer == "user" && v.reason != nullptr &&
         !v.is_default;
}

// The built-in default is a starting point the person's own layer may loosen: when a user
// allow votes on an action (votes [first, end) are that one action's), the default policy's
// asks for it decide nothing. Never a deny, never a system or project rule, and never an
// allow managed_allows_only ignores (an ignored allow casts no vote at all).
void loosen(std::vector<Vote>& votes, std::size_t first) {
  const RuleRef* by = nullptr;
  for (std::size_t i = first; i < votes.size() && by == nullptr; ++i)
    if (is_user_allow_rule(votes[i])) by = votes[i].ref;
  if (by == nullptr) return;
  for (std::size_t i = first; i < votes.size(); ++i)
    if (votes[i].verdict == Verdict::kAsk && from_default_policy(*votes[i].ref))
      votes[i].loosened_by = by;
}

json loosened_json(const Vote& v) {
  return {
      {"rule", {{"id", v.ref->id}, {"layer", v.ref->layer}, {"decision", verdict_name(v.verdict)}}},
      {"by", {{"id", v.loosened_by->id}, {"layer", v.loosened_by->layer}, {"decision", "allow"}}}};
}

bool same_ref(const RuleRef& a, const RuleRef& b) {
  return &a == &b || (a.id == b.id && a.layer == b.layer && a.file == b.file);
}

// Nobody can answer: ask becomes deny, and the reason says so.
void downgrade_headless(Decision& d) {
  d.verdict = Verdict::kDeny;
  d.headless_downgraded = true;
  d.reason +=
      std::string(d.reason.empty() ? "" : " ") + "(headless: nobody to ask, so ask becomes deny)";
}

// The strictest vote decides (a loosened one decides nothing); the first one at that
// strictness is named.
Decision combine(std::span<const Vote> votes, bool headless) {
  Decision d;
  const Vote* best = nullptr;
  std::vector<const RuleRef*> seen;
  seen.reserve(votes.size());
  json loosened = json::array();
  for (const auto& v : votes) {
    if (v.loosened_by != nullptr) loosened.push_back(loosened_json(v));
    else if (best == nullptr || v.verdict > best->verdict) best = &v;
    bool dup = std::any_of(seen.begin(), seen.end(),
                           [&](const RuleRef* r) { return same_ref(*r, *v.ref); });
    if (!dup) seen.push_back(v.ref);
  }
  MOAT_CHECK(best != nullptr);
  d.matched.reserve(seen.size());
  for (const RuleRef* r : seen) d.matched.push_back(*r);
  d.verdict = best->verdict;
  d.deciding = *best->ref;
  d.reason = best->text();
  d.decided_by = best->is_default ? DecidedBy::kDefault : DecidedBy::kPolicy;
  if (!loosened.empty()) d.detail_fn = [loosened] { return json{{"loosened", loosened}}; };
  if (headless && d.verdict == Verdict::kAsk) downgrade_headless(d);
  return d;
}

// glob(3) relative to `cwd`, as the shell would expand it; false when there are too many
// matches to judge one by one.
bool expand_glob(const std::string& pattern, const std::string& cwd,
                 std::vector<std::string>& out) {
  constexpr std::size_t kMaxMatches = 256;
  std::string abs = pattern[0] == '/' ? pattern : cwd + "/" + pattern;
  glob_t g{};
  int rc = ::glob(abs.c_str(), GLOB_NOSORT, nullptr, &g);
  bool ok = rc == 0 || rc == GLOB_NOMATCH;
  if (rc == 0 && g.gl_pathc > kMaxMatches) ok = false;
  if (rc == 0 && ok)
    for (std::size_t i = 0; i < g.gl_pathc; ++i) out.emplace_back(g.gl_pathv[i]);
  ::globfree(&g);
  return ok;
}

// At most `max` bytes of `s`, cut before a UTF-8 continuation byte so valid text stays valid
// (the reason goes into the audit record's canonical JSON).
std::string shortened(const std::string& s, std::size_t max) {
  if (s.size() <= max) return s;
  std::size_t cut = max;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  return s.substr(0, cut) + "…";
}

json ref_json(const RuleRef& r) {
  return {{"id", r.id}, {"layer", r.layer}, {"file", r.file}, {"line", r.line}};
}

// What a shell line's detail() is built from, kept alive by the Decision's closure. Vote
// refs point into the policy, so detail() is valid while the policy lives.
struct LineTrace {
  LinePlan plan;
  std::vector<ProgramInfo> programs;                       // per unit
  std::vector<Vote> votes;                                 // every unit's votes, in order
  std::vector<std::pair<std::size_t, std::size_t>> spans;  // per unit: [begin, end) in votes
};

json unit_json(const CommandUnit& u, const ProgramInfo& p, const std::vector<Vote>& unit_votes) {
  // Per unit: id, layer and decision; file and line are in Decision::matched.
  json matched = json::array();
  json loosened = json::array();
  for (const auto& v : unit_votes) {
    matched.push_back(
        {{"id", v.ref->id}, {"layer", v.ref->layer}, {"decision", verdict_name(v.verdict)}});
    if (v.loosened_by != nullptr) {
      matched.back()["loosened_by"] = v.loosened_by->id;
      loosened.push_back(loosened_json(v));
    }
  }
  json unit = {{"argv", u.argv_text()}, {"depth", u.depth}, {"matched", matched}};
  if (!loosened.empty()) unit["loosened"] = loosened;
  // Variables set for it that its argv does not show (a NAME=value prefix, env's, a loop's);
  // builtin.code-env judges them.
  json sets = json::array();
  for (const auto& a : u.assigns)
    if (u.argv.empty() || a.how != u.argv[0].text)
      sets.push_back(a.name.empty() ? "<unknown>" : a.name);
  if (!sets.empty()) unit["sets"] = sets;
  json reads = json::array();  // input redirections, judged as path reads
  for (const auto& r : u.reads)
    if (std::find(reads.begin(), reads.end(), r.path.home ? "~" + r.path.text : r.path.text) ==
        reads.end())
      reads.push_back(r.path.home ? "~" + r.path.text : r.path.text);
  if (!reads.empty()) unit["reads"] = reads;
  if (!u.origin.empty()) unit["origin"] = u.origin;
  if (!u.wrapper.empty()) unit["via"] = u.wrapper;
  if (u.rules_only) unit["wrapper"] = true;
  if (!u.problems.empty()) unit["problems"] = u.problems;
  if (!u.argv.empty() && u.problems.empty()) {
    unit["program"] = p.resolved.found ? json(p.resolved.real_path) : json(nullptr);
    if (p.resolved.found && !p.trusted_location) unit["program_writable"] = true;
  }
  if (unit_votes.empty()) {
    unit["decision"] = "none";  // a wrapper no rule names: its inner command decides
  } else {
    Decision ud = combine(unit_votes, false);
    unit["decision"] = verdict_name(ud.verdict);
    unit["deciding_rule"] = ref_json(ud.deciding);
    if (!ud.reason.empty()) unit["reason"] = ud.reason;
  }
  return unit;
}

json line_detail(const LineTrace& t) {
  json units = json::array();
  json loosened = json::array();
  for (std::size_t i = 0; i < t.plan.units.size(); ++i) {
    const auto [begin, end] = t.spans[i];
    std::vector<Vote> unit_votes(t.votes.begin() + static_cast<std::ptrdiff_t>(begin),
                                 t.votes.begin() + static_cast<std::ptrdiff_t>(end));
    units.push_back(unit_json(t.plan.units[i], t.programs[i], unit_votes));
    for (const auto& l : units.back().value("loosened", json::array())) loosened.push_back(l);
  }
  json out = {{"units", units}, {"problems", t.plan.problems}};
  if (!loosened.empty()) out["loosened"] = loosened;
  return out;
}

const RuleRef kEmptyLineRef{"empty-line", "builtin", "", 0};
const RuleRef kNetworkHostRef{"builtin.network-host", "builtin", "", 0};
const RuleRef kNetworkIpLiteralRef{"builtin.network-ip-literal", "builtin", "", 0};
const RuleRef kObservedRef{"observed", "builtin", "", 0};
const RuleRef kWriteOutsideRootsRef{"builtin.write-outside-roots", "builtin", "", 0};
const RuleRef kPersonRef{"person", "user", "", 0};  // decide_typed: the person typed the line

// Lets the rule index be searched with a string_view.
struct StringHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

struct DefaultSlot {
  Verdict verdict;
  RuleRef ref;
};

class PolicyImpl final : public Policy {
 public:
  PolicyImpl(std::vector<LoadedLayer> layers, const LoadOptions& o,
             std::vector<std::string> notices, ProjectTrust project)
      : layers_(std::move(layers)),
        project_(std::move(project)),
        headless_(o.headless),
        home_(o.home.empty() ? (std::getenv("HOME") ? std::getenv("HOME") : "/") : o.home),
        workspace_(o.workspace.empty() ? std::string() : workspace_root(o.workspace)),
        resolver_(o.search_path.empty()
                      ? sandbox_search_path(std::getenv("PATH") ? std::getenv("PATH") : kSystemPath)
                      : o.search_path),
        notices_(std::move(notices)) {
    writable_roots_ = o.writable_roots.empty() ? writable_roots(workspace_) : o.writable_roots;
    writable_roots_.insert(writable_roots_.end(), o.extra_writable_roots.begin(),
                           o.extra_writable_roots.end());
    for (auto& r : writable_roots_) r = canonical_path(r, "/");
    vars_.home = home_;
    vars_.workspace = workspace_.empty() ? canonical_path(".", "/") : workspace_;
    vars_.vars = o.path_vars;
    // moatd names its own audit directory (--audit-dir, MOAT_AUDIT_DIR, /var/log/moat);
    // elsewhere (moat policy) it is a private moatd's default.
    if (!vars_.vars.count("AUDIT_DIR"))
      vars_.vars["AUDIT_DIR"] = dirs::audit(/*system_daemon=*/false);
    match_env_.home = home_;
    match_env_.writable_roots = &writable_roots_;
  }

  Result<void> compile() {
    for (const auto& l : layers_)
      if (l.file.constraints && l.kind == "system") constraints_.push_back(&*l.file.constraints);
    for (const auto& l : layers_) {
      if (l.file.constraints && l.kind != "system")
        notices_.push_back(l.file.file +
                           ": [constraints] is honoured only in the system layer; ignored");
      MOAT_TRY(compile_layer(l));
    }
    compile_defaults();
    index_command_rules();
    MOAT_ASSIGN_OR_RETURN(mcp_servers_, effective_mcp_servers(layers_, &notices_));
    return {};
  }

  using Policy::decide_tool;
  Decision decide_tool(const std::string& tool, const json& args,
                       const ToolHints& hints) const override {
    std::vector<Vote> votes;
    for (const auto& r : tools_) {
      if (r.allow_ignored || !tool_rule_matches(r, tool, args)) continue;
      votes.push_back(rule_vote(r.rule->decision, r.ref, r.rule->reason));
    }
    loosen(votes, 0);
    if (votes.empty()) votes.push_back(tool_default(hints_heeded(tool, hints)));
    return combine(votes, headless_);
  }

  // A repository's server (project layer) may change with the repository after its pin (the
  // pin covers the declaration, not the code it starts): its readOnlyHint loosens nothing, and
  // the tool counts as one without hints (destructive, the specification's default).
  ToolHints hints_heeded(const std::string& tool, const ToolHints& hints) const {
    if (!hints.read_only || tool.rfind("mcp:", 0) != 0) return hints;
    const std::string server = tool.substr(4, tool.find(':', 4) - 4);
    for (const McpServerConfig& s : mcp_servers_)
      if (s.name == server && s.layer == "project") return ToolHints{false, true};
    return hints;
  }

  const std::vector<McpServerConfig>& mcp_servers() const override { return mcp_servers_; }

  Decision decide_command(const std::string& line, const std::string& cwd) const override {
    auto trace = judge_line(line, cwd);
    static const std::vector<Vote> empty_line = {
        Vote{Verdict::kAllow, &kEmptyLineRef, nullptr, "nothing to run", true}};
    // An empty line or only comments: nothing runs.
    Decision d = combine(trace->votes.empty() ? empty_line : trace->votes, headless_);
    d.detail_fn = [trace] { return line_detail(*trace); };
    return d;
  }

  // The person typed it: only the organisation's (system) and the command line's (cli) denies
  // and asks bind them; the rest is the person's own decision. Every vote stays in `matched`.
  Decision decide_typed(const std::string& line, const std::string& cwd) const override {
    auto trace = judge_line(line, cwd);
    std::vector<Vote> binding;
    for (const Vote& v : trace->votes)
      if (binds_typed(v)) binding.push_back(v);
    Decision d;
    if (binding.empty()) {
      d = combine(trace->votes.empty() ? std::vector<Vote>{person_vote()} : trace->votes, false);
      d.verdict = Verdict::kAllow;
      d.deciding = kPersonRef;
      d.decided_by = DecidedBy::kUser;
      d.reason = "typed by the person";
      d.headless_downgraded = false;
    } else {
      std::vector<RuleRef> matched = combine(trace->votes, false).matched;
      d = combine(binding, headless_);
      d.matched = std::move(matched);
    }
    d.detail_fn = [trace] { return line_detail(*trace); };
    return d;
  }

  Decision decide_path(const std::string& path, Access access) const override {
    std::vector<Vote> votes;
    path_votes(path, std::string(), access, votes, true);
    return combine(votes, headless_);
  }

  Decision decide_network(const std::string& raw_host, int port) const override {
    const std::optional<std::string> host = normalize_host(raw_host);
    std::vector<Vote> votes;
    if (!host) {
      votes.push_back(Vote{Verdict::kDeny, &kNetworkHostRef, nullptr,
                           "not a host name or an IP address", false});
      return combine(votes, headless_);
    }
    for (const auto& r : network_) {
      if (r.allow_ignored) continue;
      const auto& ports = r.rule->ports;
      const bool port_ok =
          ports.empty() || std::find(ports.begin(), ports.end(), port) != ports.end();
      const bool host_ok =
          std::any_of(r.rule->domains.begin(), r.rule->domains.end(),
                      [&](const std::string& d) { return domain_matches(d, *host); });
      if (port_ok && host_ok) votes.push_back(rule_vote(r.rule->decision, r.ref, r.rule->reason));
    }
    loosen(votes, 0);
    // An address is reached only when a rule names it: defaults.network = "allow" is about
    // names, and an address would bypass every name rule (and reach the host's own networks).
    const std::string port_note = port_miss(*host, port);
    if (votes.empty() && is_ip_literal(*host))
      votes.push_back(Vote{Verdict::kDeny, &kNetworkIpLiteralRef, nullptr,
                           port_note.empty()
                               ? "an IP address is reached only when a [[network]] rule names it"
                               : "no [[network]] rule names this port of the address: " + port_note,
                           false});
    if (votes.empty())
      votes.push_back(default_vote(
          defaults_.at("network"),
          "no [[network]] rule matches" + (port_note.empty() ? "" : ": " + port_note)));
    return combine(votes, headless_);
  }

  // Which condition failed when a rule names the host but not the port (issue 27 item 4):
  // "rule R names H for ports 80, 443, not 8080"; empty when no rule names the host.
  std::string port_miss(const std::string& host, int port) const {
    for (const auto& r : network_) {
      const auto& d = r.rule->domains;
      if (r.allow_ignored || r.rule->ports.empty() ||
          !std::any_of(d.begin(), d.end(),
                       [&](const std::string& p) { return domain_matches(p, host); }))
        continue;
      std::string ports;
      for (const std::int64_t p : r.rule->ports)
        ports += (ports.empty() ? "" : ", ") + std::to_string(p);
      return "rule " + r.ref.id + " names " + host + " for ports " + ports + ", not " +
             std::to_string(port);
    }
    return {};
  }

  bool may_allow_network_host(const std::string& host) const override {
    return std::any_of(network_.begin(), network_.end(), [&](const CompiledNetworkRule& r) {
      const auto& d = r.rule->domains;
      return may_allow(r.rule->decision) && !r.allow_ignored &&
             std::any_of(d.begin(), d.end(),
                         [&](const std::string& p) { return domain_matches(p, host); });
    });
  }

  // An ask can become an allow when a person is there to answer it.
  bool may_allow(Verdict v) const {
    return v == Verdict::kAllow || (v == Verdict::kAsk && !headless_);
  }

  bool grants_network() const override {
    if (may_allow(defaults_.at("network").verdict)) return true;
    return std::any_of(network_.begin(), network_.end(), [&](const CompiledNetworkRule& r) {
      return may_allow(r.rule->decision) && !r.allow_ignored;
    });
  }

  Decision decide_exec(const ExecFacts& facts) const override {
    PathCache paths(workspace_.empty() ? nullptr : &workspace_);
    MatchEnv env = match_env_;
    env.paths = &paths;
    CommandUnit u;
    auto known = [](const std::string& text) {
      Arg a;
      a.text = text;
      return a;
    };
    for (const std::string& word : facts.argv) u.argv.push_back(known(word));
    if (u.argv.empty()) u.argv.push_back(known(facts.path));
    u.argv[0].text = facts.path;  // argv[0] is the caller's choice; the file is not
    u.cwds = {facts.cwd};
    // The loader's variables and options, as the same assignments on the model's line.
    for (const ExecFacts::Load& l : facts.loads)
      u.assigns.push_back(Assignment{l.name, known(l.value), l.given});
    u.rules_only = true;  // no default: see policy.h
    normalise_flags(u);
    ProgramInfo p;
    p.argv0 = facts.path;
    p.argv0_base = std::string(base_name(facts.path));
    p.resolved.found = !facts.real_path.empty();
    p.resolved.typed_path = facts.path;
    p.resolved.real_path = facts.real_path;
    p.trusted_location = p.resolved.found && !facts.unnamed &&
                         !is_under_any(facts.path, writable_roots_) &&
                         !is_under_any(facts.real_path, writable_roots_);
    std::vector<Vote> votes;
    judge_unit(u, p, env, votes);
    if (votes.empty()) {
      Decision d;
      d.verdict = Verdict::kAllow;
      d.deciding = kObservedRef;
      d.decided_by = DecidedBy::kObserved;
      return d;
    }
    Decision d = combine(votes, false);
    // A program the project built or holds, let run by [exec] workspace_programs: recorded
    // like any program no rule gates.
    if (d.verdict == Verdict::kAllow && same_ref(d.deciding, workspace_programs_.ref))
      d.decided_by = DecidedBy::kObserved;
    if (d.verdict == Verdict::kAsk && headless_) headless_exec_ask(d);
    return d;
  }

  // What an allowed call starts, headless, met an ask rule: [exec] headless_ask decides. The
  // model's own line is not judged here (decide_command keeps ask => deny).
  void headless_exec_ask(Decision& d) const {
    if (headless_ask_.verdict != Verdict::kAllow) return downgrade_headless(d);
    d.verdict = Verdict::kAllow;
    d.decided_by = DecidedBy::kObserved;
    d.flagged = d.deciding.id;
    d.reason = "ran unasked (headless; [exec] headless_ask = \"allow\"): " + d.deciding.id +
               " would have asked" + (d.reason.empty() ? "" : ": " + d.reason);
  }

  ResourceCeilings resources() const override {
    // Effective ceilings: the minimum over the layers that set one, else schema.h's default.
    // The built-in default's is a starting point the person's (user) layer replaces, even
    // upwards; no system, project or cli ceiling is ever exceeded.
    auto min_of = [&](auto member, std::int64_t fallback) {
      std::optional<std::int64_t> builtin, user, binding;
      auto lower = [](std::optional<std::int64_t>& best, const std::optional<std::int64_t>& v) {
        if (v && (!best || *v < *best)) best = v;
      };
      for (const auto& l : layers_) {
        const auto& v = l.file.resources.*member;
        lower(l.kind == "builtin" ? builtin : l.kind == "user" ? user : binding, v);
      }
      std::optional<std::int64_t> best = user ? user : builtin;
      lower(best, binding);
      return best.value_or(fallback);
    };
    const ResourceCeilings& d = kDefaultResources;
    return {.wall_time_s = min_of(&Resources::wall_time, d.wall_time_s),
            .cpu_time_s = min_of(&Resources::cpu_time, d.cpu_time_s),
            .memory_bytes = min_of(&Resources::memory, d.memory_bytes),
            .pids = min_of(&Resources::pids, d.pids),
            .output_bytes = min_of(&Resources::output, d.output_bytes),
            .file_size = min_of(&Resources::file_size, d.file_size),
            .open_files = min_of(&Resources::open_files, d.open_files),
            .network_connections = min_of(&Resources::network_connections, d.network_connections),
            .network_bytes = min_of(&Resources::network_bytes, d.network_bytes),
            .network_idle_s = min_of(&Resources::network_idle, d.network_idle_s),
            .network_rate = min_of(&Resources::network_rate, d.network_rate)};
  }

  std::vector<std::string> protected_globs() const override {
    return workspace_globs(Access::kWrite);
  }
  std::vector<std::string> unreadable_globs() const override {
    return workspace_globs(Access::kRead);
  }

  bool audit_required() const override {
    return std::any_of(constraints_.begin(), constraints_.end(),
                       [](const Constraints* c) { return c->audit_required; });
  }

  bool mode_allowed(const std::string& mode) const override {
    for (const auto* c : constraints_)
      if (!c->allowed_modes.empty() && std::find(c->allowed_modes.begin(), c->allowed_modes.end(),
                                                 mode) == c->allowed_modes.end())
        return false;
    return true;
  }

  bool headless() const override { return headless_; }
  bool nested_git_allowed() const override { return nested_git_.verdict == Verdict::kAllow; }

  std::string expand_path(const std::string& path) const override {
    std::string p = path;
    if (p == "~" || p.rfind("~/", 0) == 0) {
      p = home_ + p.substr(1);
    } else if (!p.empty() && p[0] == '$') {
      std::size_t end = 1;
      while (end < p.size() && (std::isalnum(static_cast<unsigned char>(p[end])) || p[end] == '_'))
        ++end;
      std::string name = p.substr(1, end - 1);
      std::string value = name == "WORKSPACE" ? vars_.workspace : name == "HOME" ? home_ : "";
      if (auto it = vars_.vars.find(name); it != vars_.vars.end()) value = it->second;
      if (!value.empty()) p = value + p.substr(end);
    }
    return lexical_absolute(p, vars_.workspace);
  }
  const std::vector<std::string>& notices() const override { return notices_; }

  json project_json() const override {
    if (project_.state == TrustState::kNoProjectPolicy) return nullptr;
    json j = {{"file", project_.file},
              {"sha256", project_.policy_sha256},
              {"pin_sha256", project_.sha256},
              {"imports", project_.imports},
              {"pinned", project_.pinned.empty() ? json(nullptr) : json(project_.pinned)},
              {"state", trust_state_name(project_.state)},
              {"loaded", project_.loaded}};
    if (!project_.skipped.empty()) j["skipped"] = project_.skipped;
    return j;
  }

  json layers_json() const override {
    json out = json::array();
    for (const auto& l : layers_)
      out.push_back({{"layer", l.kind},
                     {"name", l.file.layer.name},
                     {"revision", l.file.layer.revision},
                     {"file", l.file.file},
                     {"sha256", l.file.sha256}});
    return out;
  }

  std::string policy_hash() const override {
    std::string all;
    for (const auto& l : layers_) all += l.kind + '\0' + l.file.file + '\0' + l.file.sha256 + '\n';
    return "sha256:" + sha256_hex(all);
  }

  json rules_json() const override {
    json out = json::array();
    auto add = [&](const char* kind, const RuleRef& ref, Verdict v, bool ignored,
                   const std::string& reason, const RuleTests* tests, const json& what) {
      json r = {{"kind", kind},       {"id", ref.id},     {"decision", verdict_name(v)},
                {"layer", ref.layer}, {"file", ref.file}, {"line", ref.line},
                {"ignored", ignored}, {"reason", reason}, {"match", what}};
      if (tests) r["tests"] = {{"match", tests->match}, {"not_match", tests->not_match}};
      out.push_back(std::move(r));
    };
    for (const auto& r : commands_)
      add("command", r.ref, r.rule->decision, r.allow_ignored, r.rule->reason, &r.rule->tests,
          {{"program", r.rule->program}});
    for (const auto& r : paths_)
      add("path", r.ref, r.rule->decision, r.allow_ignored, r.rule->reason, &r.rule->tests,
          {{"paths", r.rule->paths}, {"access", r.rule->access}});
    for (const auto& r : tools_) {
      json what = {{"tool", r.rule->tool}};
      for (const auto& c : r.rule->args) what["args"][c.key] = c.globs;
      add("tool", r.ref, r.rule->decision, r.allow_ignored, r.rule->reason, &r.rule->tests, what);
    }
    for (const auto& r : network_)
      add("network", r.ref, r.rule->decision, r.allow_ignored, r.rule->reason, nullptr,
          {{"domains", r.rule->domains}, {"ports", r.rule->ports}});
    for (const auto& [key, slot] : defaults_)
      add("default", slot.ref, slot.verdict, false, "", nullptr, {{"key", key}});
    for (const auto* slot : {&workspace_programs_, &headless_ask_})
      add("exec", slot->ref, slot->verdict, false, "", nullptr, {{"key", slot->ref.id}});
    add("workspace", nested_git_.ref, nested_git_.verdict, false, "", nullptr,
        {{"key", nested_git_.ref.id}});
    return out;
  }

 private:
  // Parses a line and judges every unit; the votes of all units, in order, with each unit's
  // span (decide_command and decide_typed combine them differently).
  std::shared_ptr<LineTrace> judge_line(const std::string& line, const std::string& cwd) const {
    PathCache paths(workspace_.empty() ? nullptr : &workspace_);
    MatchEnv env = match_env_;
    env.paths = &paths;
    auto trace = std::make_shared<LineTrace>();
    trace->plan =
        plan_line(line, cwd.empty() ? vars_.workspace : paths.canonical(cwd, "/"), home_, &paths);
    const LinePlan& plan = trace->plan;
    std::vector<Vote>& votes = trace->votes;
    if (!plan.problems.empty()) votes.push_back(unparseable_vote(plan.problems));
    trace->programs.resize(plan.units.size());
    trace->spans.reserve(plan.units.size());
    for (std::size_t i = 0; i < plan.units.size(); ++i) {
      const CommandUnit& u = plan.units[i];
      ProgramInfo& p = trace->programs[i];
      if (!u.argv.empty() && u.problems.empty()) p = program_info(u, resolver_, writable_roots_);
      const std::size_t begin = votes.size();
      judge_unit(u, p, env, votes);
      trace->spans.emplace_back(begin, votes.size());
    }
    return trace;
  }

  // A rule of the organisation's or the command line's that says ask or deny. Defaults
  // (command, unparseable_shell, write...) are for what nobody chose; the person chose this.
  static bool binds_typed(const Vote& v) {
    return v.verdict != Verdict::kAllow && !v.is_default &&
           (v.ref->layer == "system" || v.ref->layer == "cli");
  }

  static Vote person_vote() { return Vote{Verdict::kAllow, &kPersonRef, nullptr, "", false}; }

  bool allow_ignored(const LoadedLayer& l, Verdict v, const char* category) const {
    if (v != Verdict::kAllow) return false;
    if (l.kind == "cli") return true;  // command-line files may only narrow
    if (l.kind == "system" || l.kind == "builtin") return false;
    for (const auto* c : constraints_)
      if (std::find(c->managed_allows_only.begin(), c->managed_allows_only.end(), category) !=
          c->managed_allows_only.end())
        return true;
    return false;
  }

  static RuleRef ref_of(const LoadedLayer& l, const std::string& id, const SourcePos& pos) {
    return RuleRef{id, l.kind, pos.file, pos.line};
  }

  Result<void> compile_layer(const LoadedLayer& l) {
    auto where = [&](const SourcePos& pos) {
      return pos.file + ":" + std::to_string(pos.line) + ":" + std::to_string(pos.column) + ": ";
    };
    for (const auto& r : l.file.command) {
      CompiledCommandRule c{
          &r, ref_of(l, r.id, r.pos), {}, allow_ignored(l, r.decision, "command")};
      for (const auto& p : r.script_paths) {
        auto g = compile_path_glob(p, vars_);
        if (!g) return fail(where(r.pos) + "script_paths: " + g.error().message());
        c.script_globs.push_back(std::move(*g));
      }
      commands_.push_back(std::move(c));
    }
    for (const auto& r : l.file.path) {
      CompiledPathRule c;
      c.rule = &r;
      c.ref = ref_of(l, r.id, r.pos);
      c.allow_ignored = allow_ignored(l, r.decision, "path");
      for (const auto& a : r.access) {
        c.read = c.read || a == "read";
        c.write = c.write || a == "write";
        c.exec = c.exec || a == "exec";
      }
      for (const auto& p : r.paths) {
        auto g = compile_path_glob(p, vars_);
        if (!g) return fail(where(r.pos) + "paths: " + g.error().message());
        c.globs.push_back(std::move(*g));
      }
      for (const auto& p : r.unless.paths) {
        auto g = compile_path_glob(p, vars_);
        if (!g) return fail(where(r.pos) + "unless.paths: " + g.error().message());
        c.unless.push_back(std::move(*g));
      }
      paths_.push_back(std::move(c));
    }
    for (const auto& r : l.file.tool)
      tools_.push_back({&r, ref_of(l, r.id, r.pos), allow_ignored(l, r.decision, "tool")});
    for (const auto& r : l.file.network)
      network_.push_back({&r, ref_of(l, r.id, r.pos), allow_ignored(l, r.decision, "network")});
    return {};
  }

  // Where a layer may put a setting (a default, an [exec] key) relative to what the layers
  // before it said. The built-in default is a starting point: the person's (user) layer
  // replaces its value, looser or not. The organisation's (system) layer binds everyone: the
  // first system file sets the value and everything after it may only make it stricter, as
  // may a project or command-line (cli) layer over anything.
  static bool replaces(const LoadedLayer& l, const DefaultSlot& slot, bool user_set) {
    if (l.kind == "builtin") return true;
    if (l.kind == "system") return slot.ref.layer == "builtin";
    if (l.kind == "user") return !user_set && slot.ref.layer == "builtin";
    return false;
  }

  // One setting folded over the layers (replaces above); schema.h's default when none sets
  // it. A looser value a layer may not set is ignored with a notice naming it.
  template <typename Get>
  DefaultSlot fold_setting(const std::string& name, Verdict fallback, Get get) {
    DefaultSlot slot{fallback, RuleRef{name, "builtin", "", 0}};
    bool user_set = false;
    for (const auto& l : layers_) {
      const auto [value, pos] = get(l.file);
      if (!value) continue;
      if (!replaces(l, slot, user_set) && *value <= slot.verdict) {
        if (*value < slot.verdict)
          notices_.push_back(pos.file + ":" + std::to_string(pos.line) + ": " + name + " = \"" +
                             verdict_name(*value) + "\" is ignored: a " + l.kind +
                             " layer may only make it stricter than the " + slot.ref.layer +
                             " layer's \"" + verdict_name(slot.verdict) + "\"");
        continue;
      }
      slot = {*value, RuleRef{name, l.kind, pos.file, pos.line}};
      user_set = user_set || l.kind == "user";
    }
    return slot;
  }

  void compile_defaults() {
    struct Key {
      const char* name;
      std::optional<Verdict> Defaults::*member;
      Verdict fallback;
    };
    const Key keys[] = {{"tool", &Defaults::tool, Verdict::kAsk},
                        {"command", &Defaults::command, Verdict::kAsk},
                        {"read", &Defaults::read, Verdict::kAllow},
                        {"write", &Defaults::write, Verdict::kAsk},
                        {"exec", &Defaults::exec, Verdict::kAllow},
                        {"network", &Defaults::network, Verdict::kDeny},
                        {"unparseable_shell", &Defaults::unparseable_shell, Verdict::kAsk}};
    for (const auto& k : keys)
      defaults_.emplace(
          k.name,
          fold_setting(std::string("defaults.") + k.name, k.fallback, [&](const PolicyFile& f) {
            return std::pair(f.defaults.*(k.member), f.defaults_pos);
          }));
    workspace_programs_ = fold_setting(
        "exec.workspace_programs", Verdict::kAllow,
        [](const PolicyFile& f) { return std::pair(f.exec.workspace_programs, f.exec_pos); });
    headless_ask_ = fold_setting("exec.headless_ask", Verdict::kAllow, [](const PolicyFile& f) {
      return std::pair(f.exec.headless_ask, f.exec_pos);
    });
    nested_git_ = fold_setting("workspace.nested_git", Verdict::kDeny, [](const PolicyFile& f) {
      return std::pair(f.workspace.nested_git, f.workspace_pos);
    });
  }

  static Vote default_vote(const DefaultSlot& slot, std::string note) {
    return Vote{slot.verdict, &slot.ref, nullptr, std::move(note), true};
  }

  // No [[tool]] rule matched: defaults.tool, or what an MCP tool's annotations suggest. A
  // server is untrusted, so a hint never loosens a "deny" or the organisation's (system) value.
  Vote tool_default(const ToolHints& hints) const {
    const DefaultSlot& tool = defaults_.at("tool");
    const char* kNone = "no [[tool]] rule matches";
    if (hints.destructive && tool.verdict == Verdict::kAllow)
      return Vote{Verdict::kAsk, &tool.ref, nullptr,
                  std::string(kNone) + "; its server marks it destructive (destructiveHint)", true};
    if (!hints.read_only || tool.verdict == Verdict::kDeny || tool.ref.layer == "system")
      return default_vote(tool, kNone);
    return default_vote(defaults_.at("read"),
                        std::string(kNone) + "; its server marks it read-only (readOnlyHint)");
  }

  Vote unparseable_vote(const std::vector<std::string>& problems) const {
    std::string reason = "cannot be judged statically: ";
    for (std::size_t i = 0; i < problems.size() && i < 3; ++i)
      reason += (i ? "; " : "") + problems[i];
    return default_vote(defaults_.at("unparseable_shell"), reason);
  }

  // Appends the unit's votes to `votes`: one per rule and verdict (two globbed files
  // under one rule are one match).
  void judge_unit(const CommandUnit& u, const ProgramInfo& p, const MatchEnv& env,
                  std::vector<Vote>& votes) const {
    const std::size_t first = votes.size();
    code_env_votes(u, votes);  // first: it is the reason to name when the program's rule asks too
    if (!u.problems.empty()) {
      votes.push_back(unparseable_vote(u.problems));
    } else if (!u.argv.empty()) {
      bool matched = false;
      const std::size_t rules_first = votes.size();
      for (std::size_t i : candidate_rules(p)) {
        const CompiledCommandRule& r = commands_[i];
        if (!command_rule_matches(r, u, p, env)) continue;
        if (r.allow_ignored) continue;  // still unmatched: the default applies
        matched = true;
        votes.push_back(rule_vote(r.rule->decision, r.ref, r.rule->reason));
      }
      // After the name rules (a symlink named ls that is curl is better explained by curl's
      // rule), before the default, which it replaces: its verdict is the setting's.
      if (is_workspace_program(u, p)) {
        matched = true;
        votes.push_back(workspace_program_vote(p));
      }
      loosen(votes, rules_first);  // the program's rules: one action
      exec_votes(p, votes);        // path rules for access "exec": each path its own action
      if (!matched && !u.rules_only)
        votes.push_back(
            default_vote(defaults_.at("command"), "no [[command]] rule matches " + p.argv0_base));
    }
    for (const auto& r : u.reads) target_votes(r, Access::kRead, *env.paths, votes);
    for (const auto& w : u.writes) target_votes(w, Access::kWrite, *env.paths, votes);
    std::size_t kept = first;
    for (std::size_t i = first; i < votes.size(); ++i) {
      bool dup = std::any_of(votes.begin() + static_cast<std::ptrdiff_t>(first),
                             votes.begin() + static_cast<std::ptrdiff_t>(kept), [&](const Vote& o) {
                               return o.verdict == votes[i].verdict &&
                                      o.ref->id == votes[i].ref->id &&
                                      o.ref->file == votes[i].ref->file;
                             });
      if (dup) continue;
      if (kept != i) votes[kept] = std::move(votes[i]);
      ++kept;
    }
    votes.erase(votes.begin() + static_cast<std::ptrdiff_t>(kept), votes.end());
  }

  // A variable that loads code or chooses the executable makes the unit ask, whatever its
  // program's rules say (code_env.h). The vote names the variable (votes of one rule dedupe
  // per unit, so the first such variable is the one named).
  void code_env_votes(const CommandUnit& u, std::vector<Vote>& votes) const {
    const CodeEnvContext ctx{home_, writable_roots_};
    for (const auto& a : u.assigns) {
      const CodeEnvRow* row = code_env_hit(a, u.cwds, ctx);
      if (row == nullptr) continue;
      std::string shown =
          a.name.empty() ? "a variable" : a.name + "=" + shortened(a.value.text, 64);
      votes.push_back(Vote{Verdict::kAsk, &code_env_rule(), nullptr,
                           shown + " (" + a.how + "): " + std::string(row->reason), false});
    }
  }

  // A program whose file lies in a writable root: the project built it, or holds it (a venv's
  // python, node_modules/.bin), or sandboxed code planted it; a name-based allow never
  // matches it (match.cc program_matches). A path not there yet (`make && ./hello`: built by
  // the line itself) counts when it lies in a writable root from every directory a cd may
  // have left the line in. A bare name is looked up on the sandbox PATH, never here.
  bool is_workspace_program(const CommandUnit& u, const ProgramInfo& p) const {
    if (p.resolved.builtin) return false;
    if (p.resolved.found) return !p.trusted_location;
    const Arg& a = u.argv[0];
    if (a.home) return is_under_any(lexical_absolute(home_ + a.text, "/"), writable_roots_);
    if (!a.known || a.text.find('/') == std::string::npos) return false;
    if (a.text[0] == '/') return is_under_any(lexical_absolute(a.text, "/"), writable_roots_);
    return !u.cwds.empty() && std::all_of(u.cwds.begin(), u.cwds.end(), [&](const std::string& c) {
      return !c.empty() && is_under_any(lexical_absolute(a.text, c), writable_roots_);
    });
  }

  Vote workspace_program_vote(const ProgramInfo& p) const {
    const std::string& file = p.resolved.found ? p.resolved.real_path : p.argv0;
    const char* what = workspace_programs_.verdict == Verdict::kAllow
                           ? " is a program in a writable root (built or held by the project)"
                           : " is a program in a writable root: a file the sandboxed code could "
                             "have written or replaced";
    return Vote{workspace_programs_.verdict,
                &workspace_programs_.ref,
                nullptr,
                file + what + " ([exec] workspace_programs = \"" +
                    verdict_name(workspace_programs_.verdict) + "\")",
                false,
                nullptr};
  }

  // Indexes of the [[command]] rules whose `program` could match this unit, in rule order.
  // Exact: a rule whose names are all plain words can only match a unit whose typed or real
  // basename is one of them (match.cc program_matches); every other rule is a candidate.
  std::vector<std::size_t> candidate_rules(const ProgramInfo& p) const {
    std::vector<std::size_t> out = any_program_;
    auto add = [&](std::string_view name) {
      if (auto it = by_program_.find(name); it != by_program_.end())
        out.insert(out.end(), it->second.begin(), it->second.end());
    };
    add(p.argv0_base);
    std::string_view real_base = base_name(p.resolved.real_path);
    if (!p.resolved.builtin && !real_base.empty() && real_base != p.argv0_base) add(real_base);
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
  }

  void index_command_rules() {
    for (std::size_t i = 0; i < commands_.size(); ++i) {
      const Strings& names = commands_[i].rule->program;
      bool plain =
          !names.empty() && std::all_of(names.begin(), names.end(), [](const std::string& n) {
            return !n.empty() && n[0] != '/' && !glob::has_glob_chars(n) &&
                   n.find('\\') == std::string::npos;
          });
      if (!plain) {
        any_program_.push_back(i);
        continue;
      }
      for (const auto& n : names) {
        auto& list = by_program_[n];
        if (list.empty() || list.back() != i) list.push_back(i);
      }
    }
  }

  // The executed file is a path with access "exec": a binary planted in the workspace
  // meets the exec rules whatever name it was typed by (bypass classes 9 and 10).
  void exec_votes(const ProgramInfo& p, std::vector<Vote>& votes) const {
    if (!p.resolved.found || p.resolved.builtin) return;
    const std::size_t first = votes.size();
    for (const std::string* path : {&p.resolved.typed_path, &p.resolved.real_path}) {
      if (path->empty()) continue;
      path_votes(*path, std::string(), Access::kExec, votes, false);
    }
    if (votes.size() == first && defaults_.at("exec").verdict != Verdict::kAllow)
      votes.push_back(default_vote(defaults_.at("exec"),
                                   "no [[path]] exec rule matches " + p.resolved.real_path));
  }

  // A path the unit reads (input redirection) or writes (redirection, operand, option).
  void target_votes(const PathTarget& t, Access access, PathCache& paths,
                    std::vector<Vote>& votes) const {
    const Arg& a = t.path;
    if (!a.glob.empty() && !t.cwd.empty()) {
      // Pathname expansion: the shell expands it against the same files we can see.
      std::vector<std::string> hits;
      if (expand_glob(a.glob, t.cwd, hits)) {
        for (const auto& h : hits) known_target_votes(paths.canonical(h, t.cwd), t, access, votes);
        if (!hits.empty()) return;
        PathTarget literal = t;  // no match: the shell passes the word unchanged
        literal.path.known = true;
        literal.path.glob.clear();
        return target_votes(literal, access, paths, votes);
      }
    }
    if (a.home || a.known) {
      if (!a.home && t.cwd.empty() && (a.text.empty() || a.text[0] != '/')) {
        path_votes(std::string(), "/", access, votes, true);  // relative to an unknown cwd
        return;
      }
      known_target_votes(
          a.home ? paths.canonical(home_ + a.text, "/") : paths.canonical(a.text, t.cwd), t, access,
          votes);
      return;
    }
    // Unknown target: judge everything below the directory its known prefix names.
    std::string prefix = a.prefix;
    std::string dir;
    auto slash = prefix.rfind('/');
    std::string dir_part = slash == std::string::npos ? "" : prefix.substr(0, slash + 1);
    if (!dir_part.empty() && dir_part[0] == '/') dir = paths.canonical(dir_part, "/");
    else if (t.cwd.empty()) dir = "/";
    else dir = paths.canonical(dir_part.empty() ? "." : dir_part, t.cwd);
    under_votes(dir, access, "the target (" + a.text + ")", votes);
  }

  // A known target: the path itself, or (tar -x -C DIR, unzip -d DIR) the paths below it.
  void known_target_votes(const std::string& path, const PathTarget& t, Access access,
                          std::vector<Vote>& votes) const {
    if (!t.below) {
      const std::size_t first = votes.size();
      path_votes(path, std::string(), access, votes, true);
      if (access == Access::kWrite && t.via.rfind("redirect", 0) == 0 && !t.path.home)
        outside_roots_vote(path, first, votes);
      return;
    }
    under_votes(path, access, "which paths below " + path + " " + t.via + " writes", votes);
  }

  // A file a redirection writes outside every writable root that the path rules (votes from
  // `first`) allow (issue 27 item 24: `echo x > /etc/cron.d/job` under defaults.write = "allow" was recorded
  // allowed): the sandbox mounts everything else read-only and refuses the write, so the
  // decision says so; an ask or a deny already keeps it from being recorded as done. A
  // directory holding a root is written below (rm -r /). /dev and /proc hold the sandbox's
  // devices and descriptors (/dev/null, /dev/tty, /proc/self/fd/N), which are not files; `~` is
  // the sandbox's HOME, /tmp (the caller leaves it out).
  void outside_roots_vote(const std::string& path, std::size_t first,
                          std::vector<Vote>& votes) const {
    auto holds_root = [&](const std::string& r) { return is_under(r, path); };
    auto allows = [](const Vote& v) { return v.verdict == Verdict::kAllow; };
    if (!std::all_of(votes.begin() + static_cast<std::ptrdiff_t>(first), votes.end(), allows) ||
        path.empty() || path[0] != '/' || is_under_any(path, writable_roots_) ||
        is_under_any(path, {"/dev", "/proc"}) ||
        std::any_of(writable_roots_.begin(), writable_roots_.end(), holds_root))
      return;
    std::string roots;
    for (const auto& r : writable_roots_) roots += (roots.empty() ? "" : ", ") + r;
    votes.push_back(Vote{
        Verdict::kDeny, &kWriteOutsideRootsRef, nullptr,
        path + " is outside every writable root (" + roots + "): the sandbox refuses the write",
        false});
  }

  // Some unknown path at or below `dir` is accessed. A deny rule may or may not cover the
  // real target: that is a question for a person.
  void under_votes(const std::string& dir, Access access, const std::string& what,
                   std::vector<Vote>& votes) const {
    std::size_t first = votes.size();
    path_votes(std::string(), dir, access, votes, true);
    for (std::size_t i = first; i < votes.size(); ++i) {
      if (votes[i].verdict != Verdict::kDeny || votes[i].is_default) continue;
      votes[i].verdict = Verdict::kAsk;
      votes[i].note = what + " is not known before it runs and may be a path this rule denies";
    }
  }

  // Votes of the path rules for one access; exactly one of `path` (canonical) and
  // `under_dir` (an unknown path below it) is set. The access default applies when
  // `with_default` and no rule matched.
  void path_votes(const std::string& path, const std::string& under_dir, Access access,
                  std::vector<Vote>& votes, bool with_default) const {
    bool matched = false;
    const std::size_t first = votes.size();
    const auto parts = glob::split_path(path);  // once for every rule
    for (const auto& r : paths_) {
      bool covers = access == Access::kRead ? r.read : access == Access::kWrite ? r.write : r.exec;
      if (!covers || r.allow_ignored) continue;
      bool hit =
          under_dir.empty() ? path_rule_matches(r, parts) : path_rule_matches_under(r, under_dir);
      if (!hit) continue;
      matched = true;
      votes.push_back(rule_vote(r.rule->decision, r.ref, r.rule->reason));
    }
    loosen(votes, first);  // one path, one access: one action
    if (matched || !with_default) return;
    const char* key = access == Access::kRead    ? "read"
                      : access == Access::kWrite ? "write"
                                                 : "exec";
    std::string what = under_dir.empty() ? path : under_dir + "/<unknown>";
    votes.push_back(default_vote(defaults_.at(key),
                                 std::string("no [[path]] ") + key + " rule matches " + what));
  }

  // Deny rules inside the workspace, as workspace-relative globs for the sandbox to mask.
  std::vector<std::string> workspace_globs(Access access) const {
    std::vector<std::string> out;
    for (const auto& r : paths_)
      for (const auto& g : r.globs) (void)relative_glob(r, g, vars_.workspace, access, out);
    return out;
  }

  Result<std::vector<std::string>> denied_globs_under(const std::string& root,
                                                      Access access) const override {
    std::vector<std::string> out;
    for (const auto& r : paths_)
      for (const auto& g : r.globs)
        if (!relative_glob(r, g, root, access, out) && covers(r, access) &&
            r.rule->decision == Verdict::kDeny && path_glob_may_match_under(g, root))
          return fail("path rule " + r.ref.id + " (" + g.text + ") may match below " + root +
                      " in a way that cannot be masked there");
    return out;
  }

  static bool covers(const CompiledPathRule& r, Access access) {
    return access == Access::kRead ? r.read : access == Access::kWrite ? r.write : r.exec;
  }

  // Adds glob g of deny rule r as a glob relative to root ("**/x" patterns hold at any depth),
  // once; false when it is not a deny for `access` or does not lie below root.
  static bool relative_glob(const CompiledPathRule& r, const PathGlob& g, const std::string& root,
                            Access access, std::vector<std::string>& out) {
    if (!covers(r, access) || r.rule->decision != Verdict::kDeny) return false;
    const auto base = glob::split_path(root);
    std::vector<std::string> rel;
    if (!g.parts.empty() && g.parts[0] == "**") {
      rel.assign(g.parts.begin() + 1, g.parts.end());
      if (rel.empty()) return false;
    } else {
      if (g.parts.size() <= base.size() || !std::equal(base.begin(), base.end(), g.parts.begin()))
        return false;
      rel.assign(g.parts.begin() + static_cast<std::ptrdiff_t>(base.size()), g.parts.end());
    }
    if (rel.size() > 1 && rel.back() == "**") rel.pop_back();  // the directory itself
    std::string s;
    for (const auto& part : rel) s += (s.empty() ? "" : "/") + part;
    if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
    if (!g.parts.empty() && g.parts[0] == "**" &&
        std::find(out.begin(), out.end(), "**/" + s) == out.end())
      out.push_back("**/" + s);
    return true;
  }

  std::vector<LoadedLayer> layers_;
  ProjectTrust project_;
  bool headless_;
  std::string home_;
  std::string workspace_;
  ProgramResolver resolver_;
  std::vector<std::string> notices_;
  std::vector<std::string> writable_roots_;
  PathVars vars_;
  MatchEnv match_env_;
  std::vector<const Constraints*> constraints_;
  std::vector<CompiledCommandRule> commands_;
  // commands_ indexes by plain program name, and those with globs, paths or no program.
  std::unordered_map<std::string, std::vector<std::size_t>, StringHash, std::equal_to<>>
      by_program_;
  std::vector<std::size_t> any_program_;
  std::vector<CompiledPathRule> paths_;
  std::vector<CompiledToolRule> tools_;
  std::vector<McpServerConfig> mcp_servers_;
  struct CompiledNetworkRule {
    const NetworkRule* rule;
    RuleRef ref;
    bool allow_ignored;
  };
  std::vector<CompiledNetworkRule> network_;
  std::map<std::string, DefaultSlot> defaults_;
  DefaultSlot workspace_programs_{Verdict::kAllow, {}};  // [exec] workspace_programs
  DefaultSlot headless_ask_{Verdict::kAllow, {}};        // [exec] headless_ask
  DefaultSlot nested_git_{Verdict::kDeny, {}};           // [workspace] nested_git
};

}  // namespace

Result<std::unique_ptr<Policy>> build_policy(std::vector<LoadedLayer> layers,
                                             const LoadOptions& options,
                                             std::vector<std::string> notices,
                                             ProjectTrust project) {
  auto p = std::make_unique<PolicyImpl>(std::move(layers), options, std::move(notices),
                                        std::move(project));
  MOAT_TRY(p->compile());
  return std::unique_ptr<Policy>(std::move(p));
}

Result<std::unique_ptr<Policy>> Policy::load(const LoadOptions& options) {
  std::vector<std::string> notices;
  ProjectTrust project;
  MOAT_ASSIGN_OR_RETURN(std::vector<LoadedLayer> layers, load_layers(options, &notices, &project));
  return build_policy(std::move(layers), options, std::move(notices), std::move(project));
}

}  // namespace moat::policy
