// agent/batch/runner.cc: `moat batch` as a checklist: read the manifest, pick the shard, open
// OUT, skip what is done, run the rest --jobs at a time, write the report, apply.
#include "agent/batch/runner.h"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <mutex>
#include <thread>
#include <vector>

#include "agent/batch/item.h"
#include "agent/batch/manifest.h"
#include "agent/batch/preflight.h"
#include "agent/batch/process.h"
#include "agent/batch/progress.h"
#include "agent/batch/report.h"
#include "agent/batch/results.h"
#include "agent/batch/url_clone.h"
#include "agent/cli.h"
#include "base/byte_strings.h"

namespace moat::agent::batch {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

// Removes finished items' work copies on a thread of its own, off the items' path; the
// destructor waits until all are gone.
class Reaper {
 public:
  Reaper() : thread_([this] { loop(); }) {}
  ~Reaper() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
    }
    cv_.notify_one();
    thread_.join();
  }
  void discard(const std::string& dir) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.push_back(dir);
    }
    cv_.notify_one();
  }

 private:
  void loop() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      cv_.wait(lock, [this] { return done_ || !queue_.empty(); });
      if (queue_.empty()) return;  // done_ and nothing left
      const std::string dir = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      std::error_code ec;
      fs::remove_all(dir, ec);
      lock.lock();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> queue_;
  bool done_ = false;
  std::thread thread_;
};

// What this run does: the shard's items, those already in results.jsonl, the rest.
struct Plan {
  Manifest manifest;
  std::vector<const Item*> shard;
  std::vector<const Item*> todo;
  std::vector<ItemResult> earlier;
  double earlier_cost = 0;  // what earlier runs spent, retried items' runs included
  std::int64_t url_checkout_bytes = 0;
};

// OUT must be the person's alone: another user who can write in it (a folder made in /tmp
// before the batch ran) could plant symlinks where the batch writes (a clone's bundle, the
// logs, the patches) or a bundle the batch would take as already fetched.
Result<void> check_not_shared(const std::string& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0)
    return errno == ENOENT ? Result<void>{} : fail(Error::from_errno("stat", errno, dir));
  const bool group_writes = (st.st_mode & S_IWGRP) != 0 && st.st_gid != ::getegid();
  if (st.st_uid == ::geteuid() && (st.st_mode & S_IWOTH) == 0 && !group_writes) return {};
  char mode[8];
  std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
  return fail(dir + ": owned by uid " + std::to_string(st.st_uid) + " (group " +
              std::to_string(st.st_gid) + ", mode " + mode +
              "): moat batch writes only into a folder that is yours and that no other user can "
              "write in (another could plant links where the batch writes); choose another "
              "--out, e.g. under your home, or one it may create");
}

Result<void> open_out(const BatchOptions& o, Plan& plan) {
  MOAT_TRY(check_not_shared(o.out_dir));
  MOAT_TRY(check_not_shared((fs::path(o.out_dir) / "clones").string()));
  std::error_code ec;
  fs::create_directories(fs::path(o.out_dir) / "patches", ec);
  if (ec) return fail(Error::from_errno("mkdir", ec.value(), o.out_dir));
  MOAT_ASSIGN_OR_RETURN(plan.earlier, read_results((fs::path(o.out_dir) / kResultsFile).string()));
  if (!plan.earlier.empty() && !o.resume)
    return fail(o.out_dir +
                " already holds results of a batch: pass --resume to go on with it, "
                "or choose another --out");
  json ids = json::array(), shard_ids = json::array();
  for (const auto& i : plan.manifest.items) ids.push_back(i.id);
  for (const auto* i : plan.shard) shard_ids.push_back(i->id);
  json info = {
      {"manifest", fs::absolute(o.manifest).string()}, {"items", ids}, {"shardItems", shard_ids}};
  if (o.shard)
    info["shard"] = std::to_string(o.shard->first) + "/" + std::to_string(o.shard->second);
  return write_file_durably((fs::path(o.out_dir) / kBatchInfoFile).string(), info.dump(2) + "\n");
}

// --retry-failed: an item that failed or could not run is run again; its new line replaces the
// old one (a line per item, as every reader of results.jsonl expects).
bool is_retried(const ItemResult& r) {
  return r.status == "failed" || r.status == "error";
}

// results.jsonl rewritten whole (a temporary file renamed over it): a kill leaves the old file
// or the new one, and an item missing from it only runs again.
Result<void> write_results(const std::string& out_dir, const std::vector<ItemResult>& lines) {
  std::string text;
  for (const auto& r : lines) text += dump_lossless(to_json(r)) + "\n";
  return write_file_durably((fs::path(out_dir) / kResultsFile).string(), text);
}

Result<Plan> plan_batch(const BatchOptions& o) {
  if (o.retry_failed && !o.resume)
    return fail(std::string("--retry-failed goes with --resume (it runs again the failed items "
                            "of an output that holds results)"));
  if (o.apply_host_executed && !o.apply)
    return fail(std::string("--apply-host-executed goes with --apply (it lets --apply write "
                            "files that programs on your host run code from)"));
  Plan plan;
  MOAT_ASSIGN_OR_RETURN(plan.manifest, load_manifest(o.manifest));
  for (const auto& item : plan.manifest.items)
    if (!o.shard || in_shard(item.id, o.shard->first, o.shard->second)) plan.shard.push_back(&item);
  MOAT_TRY(open_out(o, plan));
  // A host the policy does not allow fails the batch before any item starts (or is cloned).
  const std::string scratch = (fs::path(o.out_dir) / "clones").string();
  std::error_code ec;
  fs::create_directories(scratch, ec);
  MOAT_ASSIGN_OR_RETURN(
      plan.url_checkout_bytes,
      check_urls_allowed(plan.shard, plan.manifest.policy_files, fs::absolute(scratch)));
  for (const auto& r : plan.earlier) plan.earlier_cost += r.cost.value_or(0);
  if (o.retry_failed) std::erase_if(plan.earlier, is_retried);
  const auto done = finished_ids(plan.earlier);
  for (const auto* item : plan.shard)
    if (done.count(item->id) == 0) plan.todo.push_back(item);
  // What would fail every item fails the batch now, before one starts.
  MOAT_TRY(check_before_items(plan.todo, plan.manifest.policy_files, fs::absolute(scratch)));
  // Only now, the batch being able to run them: the retried items' lines leave the file.
  if (o.retry_failed) MOAT_TRY(write_results(o.out_dir, plan.earlier));
  return plan;
}

// --jobs workers take the next item until none is left or the cost ceiling is reached.
std::size_t run_items(const Plan& plan, const BatchEnv& env, unsigned jobs, ResultsLog& log,
                      Progress& progress) {
  std::atomic<std::size_t> next{0}, not_started{0};
  auto worker = [&] {
    for (std::size_t i; (i = next.fetch_add(1)) < plan.todo.size();) {
      const double ceiling = plan.manifest.max_total_cost;
      if (ceiling > 0 && progress.cost() >= ceiling) {
        ++not_started;
        continue;
      }
      const Item& item = *plan.todo[i];
      progress.started(item.id);
      const ItemResult line = run_item(item, env);
      if (auto a = log.append(to_json(line)); !a)
        std::fprintf(stderr, "moat batch: %s: %s\n", kResultsFile, a.error().message().c_str());
      progress.finished(line);
    }
  };
  std::vector<std::thread> threads;
  for (unsigned j = 0; j < std::max(1u, jobs); ++j) threads.emplace_back(worker);
  for (auto& t : threads) t.join();
  if (not_started > 0)
    std::fprintf(stderr,
                 "moat batch: %zu item(s) not started: the batch's max_total_cost ($%.4f) "
                 "was reached\n",
                 not_started.load(), plan.manifest.max_total_cost);
  return not_started;
}

// The files of a results line's patch that a host program runs code from, "a, b".
std::string host_executed_list(const ItemResult& r) {
  std::string names;
  for (const std::string& f : r.host_executed.value_or(std::vector<std::string>{}))
    names += (names.empty() ? "" : ", ") + f;
  return names;
}

// One patch into its repository, if it applies; the message names what happened.
Result<void> apply_one(const ItemResult& r, const std::string& patch, bool host_executed_allowed) {
  const std::string &repo = r.repo, host = host_executed_list(r);
  // Such a file runs code as the person when the folder is opened, cd'd into or `git status`ed
  // (docs/security.md): it goes in only when they say so, after reading it.
  if (!host.empty() && !host_executed_allowed)
    return fail("it adds or changes files that programs on your host run code from (" + host +
                "); read the patch, then apply it yourself (git -C " + repo + " apply " + patch +
                ") or run again with --resume --apply --apply-host-executed");
  MOAT_TRY(process_output({"git", "-C", repo, "apply", "--check", patch}));
  MOAT_TRY(process_output({"git", "-C", repo, "apply", patch}));
  return {};
}

// --apply: each patch whose check passed goes into the repository it came from, if it applies
// and (unless allowed) writes no file a host program runs code from. A url repo has no local
// repository to apply to: it is named and left for the person. Returns how many did not apply
// (each named with the reason, or git's message).
std::size_t apply_patches(const std::vector<ItemResult>& results, const BatchOptions& o) {
  std::size_t not_applied = 0;
  for (const auto& r : results) {
    if (!check_passed(r) || !r.patch) continue;
    const std::string patch = (fs::path(o.out_dir) / *r.patch).string();
    if (r.url) {
      std::fprintf(stderr,
                   "moat batch: apply %s: not applied: the item was cloned from %s, not a local "
                   "repository; apply it in a clone of that (git apply %s)\n",
                   r.patch->c_str(), r.repo.c_str(), patch.c_str());
      continue;
    }
    auto ok = apply_one(r, patch, o.apply_host_executed);
    if (!ok) ++not_applied;
    std::fprintf(stderr, "moat batch: apply %s (%s) to %s: %s\n", r.id.c_str(), patch.c_str(),
                 r.repo.c_str(),
                 ok ? "applied" : ("NOT applied: " + ok.error().message()).c_str());
  }
  return not_applied;
}

// The last lines: each item whose patch writes files a host program runs code from (so
// they are read whether or not --apply was given), the shard's totals and where the report is.
void print_summary(const std::vector<ItemResult>& results, std::size_t not_started,
                   const std::string& out_dir) {
  std::size_t passed = 0, failed = 0, errors = 0;
  double cost = 0;
  for (const auto& r : results)
    if (const std::string host = host_executed_list(r); !host.empty())
      std::fprintf(stderr,
                   "moat batch: %s: its patch adds or changes files that programs on your host "
                   "run code from: %s\n",
                   r.id.c_str(), host.c_str());
  for (const auto& r : results) {
    if (r.status == "passed") ++passed;
    else if (r.status == "failed") ++failed;
    else ++errors;
    cost += r.cost.value_or(0);
  }
  std::fprintf(stderr,
               "moat batch: %zu items: %zu passed, %zu failed, %zu errors, %zu not started; "
               "cost $%.4f\nmoat batch: report: %s\n",
               results.size() + not_started, passed, failed, errors, not_started, cost,
               (fs::path(out_dir) / "report.html").c_str());
}

}  // namespace

int run_batch(const BatchOptions& options) {
  // OUT absolute once, before anything uses it: every path under it (a patch handed to
  // `git -C REPO apply`, the items' logs) then means the same from any directory.
  BatchOptions o = options;
  o.out_dir = fs::absolute(o.out_dir).lexically_normal().string();
  auto plan = plan_batch(o);
  if (!plan) {
    std::fprintf(stderr, "moat batch: %s\n", plan.error().message().c_str());
    return kExitUsage;
  }
  BatchEnv env{fs::read_symlink("/proc/self/exe").string(),
               o.out_dir,
               plan->manifest.policy_files,
               {},
               plan->url_checkout_bytes};
  // `npm ci` in a check needs the registry the policy allows, as the item's agent has it.
  if (auto policy = load_batch_policy(plan->manifest.policy_files, o.out_dir))
    env.check_network = (*policy)->grants_network();
  const double cost = plan->earlier_cost;
  std::fprintf(stderr, "moat batch: %zu item(s) in this shard, %zu already done, %zu to run\n",
               plan->shard.size(), plan->shard.size() - plan->todo.size(), plan->todo.size());
  auto log = ResultsLog::open(o.out_dir);
  if (!log) {
    std::fprintf(stderr, "moat batch: %s\n", log.error().message().c_str());
    return kExitStore;
  }
  Progress progress(plan->shard.size(), plan->shard.size() - plan->todo.size(), cost, o.json_events,
                    ::isatty(STDERR_FILENO) == 1);
  std::size_t not_started = 0;
  {
    Reaper reaper;
    env.discard_work = [&reaper](const std::string& work) { reaper.discard(work); };
    not_started = run_items(*plan, env, o.jobs, **log, progress);
  }
  progress.close();
  auto results = read_results((fs::path(o.out_dir) / kResultsFile).string());
  if (!results) return kExitStore;
  write_report(o.out_dir, *results, {});
  const std::size_t not_applied = o.apply ? apply_patches(*results, o) : 0;
  print_summary(*results, not_started, o.out_dir);
  bool all_passed = not_started == 0 && not_applied == 0;
  for (const auto& r : *results) all_passed = all_passed && r.status == "passed";
  return all_passed ? kExitDone : kExitTaskFailed;
}

}  // namespace moat::agent::batch
