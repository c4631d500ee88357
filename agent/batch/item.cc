// agent/batch/item.cc: one item, as a checklist: work copy, agent, check, patch, session
// totals, pages, results line. Every process it starts runs outside the sandbox except what
// `moat run` and `moat sandbox exec` hand to moatd.
#include "agent/batch/item.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "agent/batch/item_result.h"
#include "agent/batch/process.h"
#include "agent/batch/results.h"
#include "agent/batch/url_clone.h"
#include "agent/providers/usage.h"
#include "sandbox/protect.h"
#include "sessions/audit_verify.h"
#include "sessions/message.h"
#include "sessions/render_audit.h"
#include "sessions/render_session.h"
#include "sessions/store.h"

namespace moat::agent::batch {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

// A killed item's agent gets this long past its own wall-time gate to stop by itself.
constexpr double kWallGraceS = 30;

struct Paths {
  std::string dir, base, work, task, sessions, audit, check_audit, run_log, check_log, diff, patch;
  // Host git's environment over the item's files: a url repo's are the remote's, so git runs
  // with none of the person's configuration (url_clone.h); a local repository is theirs.
  std::vector<std::pair<std::string, std::string>> git_env;
};

Paths paths_of(const BatchEnv& env, const Item& item) {
  const std::string& id = item.id;
  Paths p;
  if (!item.url.empty()) p.git_env = isolated_git_env();
  p.dir = item_dir(env.out_dir, id);
  p.base = p.dir + "/base.git";
  p.work = (fs::path(env.out_dir) / "work" / id).string();
  p.task = p.dir + "/task.txt";
  p.sessions = p.dir + "/sessions";
  p.audit = p.dir + "/audit";
  p.check_audit = p.dir + "/check-audit";  // the check's own moatd: a log of its own
  p.run_log = p.dir + "/run.log";
  p.check_log = p.dir + "/check.log";
  p.diff = p.dir + "/diff.tmp";
  p.patch = patch_path(env.out_dir, id);
  return p;
}

Result<std::string> git_output(const Paths& p, std::vector<std::string> argv) {
  return process_output(argv, p.git_env);
}

// git over the work copy's files with moat's own repository (OUT/items/ID/base.git), never the
// work copy's .git: the sandboxed agent may rewrite that (a .git/objects symlink to any host
// folder made git, run here outside the sandbox, write objects there). Hooks, fsmonitor,
// external diff drivers and textconv filters would run programs, so all are off.
std::vector<std::string> git(const Paths& p, std::initializer_list<std::string> args) {
  std::vector<std::string> argv = {
      "git", "--git-dir=" + p.base, "--work-tree=" + p.work, "-c", "core.hooksPath=/dev/null",
      "-c",  "core.fsmonitor=false"};
  argv.insert(argv.end(), args);
  return argv;
}

// moat's own copy (OUT/items/ID/base.git): a bare clone of a local repository, or of a url
// repo's bundle (url_clone.h) with no configuration of the person's. With a ref its HEAD is
// that commit, detached. No hook runs in either (hooksPath /dev/null, no templates for a url).
Result<void> make_base(const Item& item, const BatchEnv& env, const Paths& p, ItemResult& line) {
  std::string source = item.path;
  if (!item.url.empty()) {
    MOAT_ASSIGN_OR_RETURN(UrlBundle b, fetch_url_bundle(item.url, env));
    source = b.path;
    line.clone = CloneUsed{fs::relative(b.path, env.out_dir).string(),
                           fs::relative(b.dir + "/clone.log", env.out_dir).string(), b.cached};
  }
  MOAT_TRY(git_output(
      p, {"git", "-c", "core.hooksPath=/dev/null", "clone", "-q", "--bare", "--", source, p.base}));
  if (item.ref.empty()) return {};
  auto commit = git_output(p, {"git", "--git-dir=" + p.base, "rev-parse", "--verify", "--quiet",
                               "--end-of-options", item.ref + "^{commit}"});
  if (!commit)
    return fail("ref \"" + item.ref + "\": no branch, tag or commit of that name in " +
                (item.url.empty() ? item.path : item.url));
  MOAT_TRY(
      git_output(p, {"git", "--git-dir=" + p.base, "update-ref", "--no-deref", "HEAD", *commit}));
  return {};
}

// A fresh item folder and work copy (what a killed earlier run left is removed first). The
// work copy is cloned from moat's bare copy with its own objects (--no-hardlinks): nothing the
// item does reaches the original, or moat's copy.
Result<std::string> make_work_copy(const Item& item, const BatchEnv& env, const Paths& p,
                                   ItemResult& line) {
  std::error_code ec;
  fs::remove_all(p.dir, ec);
  fs::remove_all(p.work, ec);
  fs::create_directories(p.dir, ec);
  fs::create_directories(fs::path(p.work).parent_path(), ec);
  if (ec) return fail(Error::from_errno("mkdir", ec.value(), p.dir));
  std::ofstream(p.task) << item.task;
  MOAT_TRY(make_base(item, env, p, line));
  if (!item.url.empty()) MOAT_TRY(url_checkout_fits(p.base, env.url_checkout_bytes));
  MOAT_TRY(git_output(p, {"git", "-c", "core.hooksPath=/dev/null", "clone", "-q", "--no-hardlinks",
                          "--", p.base, p.work}));
  return git_output(p, {"git", "--git-dir=" + p.base, "rev-parse", "HEAD"});
}

std::vector<std::string> run_argv(const Item& item, const BatchEnv& env, const Paths& p) {
  const ItemLimits& l = item.limits;
  std::vector<std::string> a = {
      env.moat_bin, "run",         "--headless",  "--model",     item.model,
      "-C",         p.work,        "--task-file", p.task,        "--sessions-dir",
      p.sessions,   "--audit-dir", p.audit,       "--max-turns", std::to_string(l.max_turns)};
  if (l.max_tokens > 0) a.insert(a.end(), {"--max-tokens", std::to_string(l.max_tokens)});
  if (l.max_cost > 0) a.insert(a.end(), {"--max-cost", std::to_string(l.max_cost)});
  if (l.max_wall_s > 0) a.insert(a.end(), {"--max-wall", std::to_string(l.max_wall_s)});
  for (const auto& f : env.policy_files) a.insert(a.end(), {"--policy", f});
  return a;
}

// The check runs as a tool call would: through a moatd of its own, in a sandbox over the work
// copy, with the same policy, recorded in the item's check-audit folder (linked from the
// report beside the agent's).
std::vector<std::string> check_argv(const Item& item, const BatchEnv& env, const Paths& p) {
  std::vector<std::string> a = {
      env.moat_bin,  "sandbox",   "exec",
      "-C",          p.work,      "--audit-dir",
      p.check_audit, "--timeout", std::to_string(item.limits.check_timeout_s)};
  if (env.check_network) a.push_back("--network");
  for (const auto& f : env.policy_files) a.insert(a.end(), {"--policy", f});
  a.insert(a.end(), {"--", "sh", "-c", item.check});
  return a;
}

RunEnd run_end(const Finished& f) { return {f.exit_code, f.seconds, f.signal, f.timed_out}; }

// The work copy's changes against the starting commit, new files included, as a git patch.
Result<std::string> make_patch(const Paths& p, const std::string& start) {
  // The index starts as the starting commit's tree, so what the work copy cannot show as it
  // is in the tree (a submodule that is not checked out) is not taken for a deletion.
  MOAT_TRY(git_output(p, git(p, {"read-tree", start})));
  MOAT_TRY(git_output(p, git(p, {"add", "-A"})));
  MOAT_ASSIGN_OR_RETURN(Finished f, run_process({git(p, {"diff", "--cached", "--binary",
                                                         "--no-ext-diff", "--no-textconv", start}),
                                                 p.diff, p.run_log, 0, p.git_env}));
  if (!f.ok()) return fail("git diff in " + p.work + " failed (see " + p.run_log + ")");
  std::ifstream in(p.diff, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  fs::remove(p.diff);
  MOAT_TRY(write_file_durably(p.patch, ss.str()));
  return ss.str();
}

// The files the patch adds or changes that a program on the host runs code from (docs/
// security.md, "Files the host runs code from": sandbox/protect.cc's table, the one the sandbox
// masks), and any path with a `.git` component: `into.host_executed`, when there are any.
// `--apply` leaves such a patch for the person to read (runner.cc). Deletions are not listed:
// a file that is gone runs nothing.
Result<void> add_host_executed(const Paths& p, const std::string& start, ItemResult& into) {
  MOAT_ASSIGN_OR_RETURN(std::string names,
                        git_output(p, git(p, {"diff", "--cached", "--name-only", "-z",
                                              "--no-renames", "--diff-filter=d", start})));
  std::vector<std::string> listed;
  for (std::size_t at = 0; at < names.size();) {
    std::size_t end = names.find('\0', at);
    if (end == std::string::npos) end = names.size();
    const std::string path = names.substr(at, end - at);
    if (!path.empty() && sandbox::host_executed_match(path) != nullptr) listed.push_back(path);
    at = end + 1;
  }
  if (!listed.empty()) into.host_executed = std::move(listed);
  return {};
}

std::string only_file_under(const std::string& dir, const std::string& ext) {
  std::error_code ec;
  std::string found;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->is_regular_file() && it->path().extension() == ext &&
        (found.empty() || it->path().string() < found))
      found = it->path().string();
  return found;
}

// The session's id, turns, usage and cost, from the session file the agent wrote.
void add_session_totals(const Paths& p, ItemResult& line) {
  const std::string file = only_file_under(p.sessions, ".jsonl");
  if (file.empty()) return;
  auto store = sessions::SessionStore::open_read_only(file);
  if (!store) return;
  providers::SessionTotals totals;
  for (const auto& e : (*store)->path_to_leaf()) {
    const json& m = e.value("message", json::object());
    if (e.value("type", "") != "message" || !sessions::is_assistant(m)) continue;
    providers::Cost c;
    if (m.contains("cost") && m["cost"].is_object()) c.total = m["cost"].value("total", 0.0);
    totals.add(providers::Usage::from_message(m), c);
  }
  line.session = (*store)->id();
  line.session_file = file;
  line.turns = totals.answers;
  line.usage = totals.usage.to_json();
  line.cost = totals.cost.total;
  std::ofstream(p.dir + "/session.html")
      << sessions::session_html(**store, (*store)->path_to_leaf());
}

// The programs that ran although a rule asks about them, because nobody could be asked
// ([exec] headless_ask = "allow"): `into.flagged_execs` counts them and `into.flagged`
// names the first few ({argv, rule}), from the exec records' "flagged".
void add_flagged(const std::vector<json>& records, AuditSide& into) {
  constexpr std::size_t kListed = 10;
  std::vector<FlaggedExec> listed;
  int count = 0;
  for (const json& r : records) {
    if (r.value("type", "") != "exec" || !r.contains("flagged") || !r["flagged"].is_string())
      continue;
    ++count;
    if (listed.size() >= kListed) continue;
    std::string argv;
    if (r.contains("argv") && r["argv"].is_array())
      for (const json& w : r["argv"])
        argv += (argv.empty() ? "" : " ") + (w.is_string() ? w.get<std::string>() : w.dump());
    listed.push_back({argv, r["flagged"].get<std::string>()});
  }
  into.flagged_execs = count;
  into.flagged = std::move(listed);
}

// The audit timeline of the one session whose log is under `dir` (the agent's, or the
// check's): its path in `into.audit_log`, its page at `page`, and its flagged programs.
void add_audit_page(const std::string& dir, const std::string& page, AuditSide& into) {
  const std::string log = only_file_under(dir, ".jsonl");
  if (log.empty()) return;
  into.audit_log = log;
  auto records = sessions::load_audit_records(log);
  if (records) add_flagged(*records, into);
  auto verdict = sessions::verify_audit_file(log, /*require_end=*/false);
  if (records && verdict) std::ofstream(page) << sessions::audit_html(*records, *verdict, log);
}

ItemResult error_line(ItemResult line, const std::string& why) {
  line.status = "error";
  line.reason = why;
  return line;
}

}  // namespace

std::string patch_path(const std::string& out_dir, const std::string& id) {
  return (fs::path(out_dir) / "patches" / (id + ".patch")).string();
}

std::string item_dir(const std::string& out_dir, const std::string& id) {
  return (fs::path(out_dir) / "items" / id).string();
}

ItemResult run_item(const Item& item, const BatchEnv& env) {
  const auto start = Clock::now();
  const Paths p = paths_of(env, item);
  ItemResult line;
  line.id = item.id;
  line.repo = item.url.empty() ? item.path : item.url;
  line.model = item.model;
  if (!item.url.empty()) line.url = item.url;
  if (!item.ref.empty()) line.ref = item.ref;
  auto wall = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  auto lap = start;
  auto step = [&](const char* name) {  // each step's seconds, for the bench and the curious
    const auto now = Clock::now();
    line.steps[name] = std::chrono::duration<double>(now - lap).count();
    lap = now;
  };
  auto commit = make_work_copy(item, env, p, line);
  step("workCopy");
  if (!commit) return error_line(line, "work copy: " + commit.error().message());
  line.start_commit = *commit;
  const double hard = item.limits.max_wall_s > 0 ? item.limits.max_wall_s + kWallGraceS : 0;
  auto agent = run_process({run_argv(item, env, p), p.run_log, "", hard, {}});
  if (!agent) return error_line(line, "moat run: " + agent.error().message());
  line.agent = run_end(*agent);
  line.exit = agent->exit_code;
  step("agent");
  add_session_totals(p, line);
  add_audit_page(p.audit, p.dir + "/audit.html", line.audit);
  step("pages");
  bool check_ok = true;
  if (!item.check.empty()) {
    const double check_hard = static_cast<double>(item.limits.check_timeout_s) + kWallGraceS;
    auto check = run_process({check_argv(item, env, p), p.check_log, "", check_hard, {}});
    if (!check) return error_line(line, "check: " + check.error().message());
    check_ok = check->ok();
    line.check = CheckEnd{run_end(*check), item.check, check_ok, {}};
    add_audit_page(p.check_audit, p.dir + "/check-audit.html", line.check->audit);
  }
  step("check");
  auto patch = make_patch(p, *commit);
  if (!patch) return error_line(line, "patch: " + patch.error().message());
  line.patch = fs::relative(p.patch, env.out_dir).string();
  line.patch_bytes = patch->size();
  if (auto listed = add_host_executed(p, *commit, line); !listed)
    return error_line(line, "patch: " + listed.error().message());
  step("patch");
  // The patch holds what the item changed.
  for (const std::string& dir : {p.work, p.base}) {
    if (env.discard_work) {
      env.discard_work(dir);
    } else {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  }
  line.status = agent->ok() && check_ok ? "passed" : "failed";
  if (!agent->ok()) line.reason = "moat run exited " + std::to_string(agent->exit_code);
  else if (!check_ok) line.reason = "the check failed";
  line.wall_seconds = wall();
  return line;
}

}  // namespace moat::agent::batch
