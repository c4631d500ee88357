// agent/batch/preflight.cc: a batch's model and check command, checked once before any item.
#include "agent/batch/preflight.h"

#include <set>

#include "agent/batch/process.h"
#include "agent/model_open.h"
#include "agent/providers/config.h"
#include "base/log.h"
#include "base/moat_dirs.h"
#include "base/shell_words.h"

namespace moat::agent::batch {
namespace {

std::string item_text(const Item& item) {
  return "repo \"" + item.id + "\" (manifest line " + std::to_string(item.line) + ")";
}

// What `moat run --model` checks before it starts anything (agent/model_open.h), so a model
// that passes here is one every item's `moat run` accepts.
Result<void> check_model(const Item& item) {
  if (auto c = check_provider(item.model); !c)
    return fail(item_text(item) + ": model " + moat::quoted(item.model) + ": " +
                c.error().message());
  return {};
}

// The check runs as `moat sandbox exec -- sh -c CHECK` (item.cc), a line the person typed:
// moatd judges it with decide_typed, and headless an ask is a deny.
Result<void> check_check(const Item& item, const policy::Policy& policy,
                         const std::string& scratch_dir) {
  // sh -n reads the line without running any of it: a quote left open fails every check.
  if (auto parsed = process_output({"sh", "-n", "-c", item.check}); !parsed)
    return fail(item_text(item) + ": check " + moat::quoted(item.check) +
                " is not a shell line sh can read: " + parsed.error().message());
  const policy::Decision d = policy.decide_typed(shell_join({"sh", "-c", item.check}), scratch_dir);
  if (d.verdict == policy::Verdict::kAllow) return {};
  return fail(item_text(item) + ": check " + moat::quoted(item.check) + ": the policy " +
              (d.headless_downgraded ? "asks before running it, and a batch cannot ask"
                                     : "refuses it") +
              " (decided by " + rule_text(d.deciding) + (d.reason.empty() ? "" : ": " + d.reason) +
              "), so every item's check would fail");
}

}  // namespace

Result<std::unique_ptr<policy::Policy>> load_batch_policy(
    const std::vector<std::string>& policy_files, const std::string& scratch_dir) {
  policy::LoadOptions o;
  o.system_dir = dirs::system_policy();
  o.user_dir = dirs::user_policy();
  o.workspace = scratch_dir;
  o.extra_files = policy_files;
  o.headless = true;
  return policy::Policy::load(o);
}

std::string rule_text(const policy::RuleRef& r) {
  std::string s = r.id;
  if (!r.layer.empty()) s += " in the " + r.layer + " layer";
  if (!r.file.empty()) s += ", " + r.file + ":" + std::to_string(r.line);
  return s;
}

Result<void> check_before_items(const std::vector<const Item*>& items,
                                const std::vector<std::string>& policy_files,
                                const std::string& scratch_dir) {
  // config.toml is read by every item's `moat run`, whichever model it runs.
  if (auto config = providers::load_config(); !config) return fail(config.error());
  std::set<std::string> models, checks;
  for (const Item* i : items)
    if (models.insert(i->model).second) MOAT_TRY(check_model(*i));
  std::unique_ptr<policy::Policy> policy;
  for (const Item* i : items) {
    if (i->check.empty() || !checks.insert(i->check).second) continue;
    if (!policy) {
      auto p = load_batch_policy(policy_files, scratch_dir);
      if (!p) return fail(p.error().with_context("loading the policy the checks run under"));
      policy = std::move(*p);
    }
    MOAT_TRY(check_check(*i, *policy, scratch_dir));
  }
  return {};
}

}  // namespace moat::agent::batch
