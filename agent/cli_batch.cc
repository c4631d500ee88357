// agent/cli_batch.cc: `moat batch MANIFEST` and `moat batch merge OUT...` (agent/batch/).
#include <memory>
#include <string>
#include <vector>

#include "agent/batch/manifest.h"
#include "agent/batch/merge.h"
#include "agent/batch/runner.h"
#include "agent/cli.h"

namespace moat::agent {

void add_batch_command(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<batch::BatchOptions>();
  auto shard = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand(
      "batch",
      "Run one task over many repositories, each item in its own work copy, sandbox, "
      "session and audit log (docs/batch.md)");
  // 1: an item failed or its patch did not apply (or a merge misses or holds failed items);
  // 2: usage, or what would fail every item (the model, config.toml, the check); 5:
  // results.jsonl could not be written.
  set_exit_codes(*cmd, {kExitDone, kExitTaskFailed, kExitUsage, kExitStore});
  cmd->add_option("manifest", o->manifest, "The batch manifest (TOML)");
  cmd->add_option("--jobs,-j", o->jobs, "Items at once")->capture_default_str();
  cmd->add_option("--out", o->out_dir, "Output folder: results.jsonl, patches/, report.html")
      ->capture_default_str();
  cmd->add_flag("--resume", o->resume, "Skip the items OUT/results.jsonl already has");
  cmd->add_flag("--retry-failed", o->retry_failed,
                "With --resume: run again the items that failed or could not run (their new "
                "result replaces the old one)");
  cmd->add_flag("--apply", o->apply,
                "Apply each patch whose check passed to the local repository it came from (a "
                "url repo's patch is named, never applied)");
  cmd->add_flag("--apply-host-executed", o->apply_host_executed,
                "With --apply: apply also the patches that add or change files programs on your "
                "host run code from (.envrc, .vscode/tasks.json, .git entries; docs/security.md); "
                "without it they are named and not applied");
  cmd->add_flag("--json", o->json_events, "One JSON event per item start and finish on stdout");
  cmd->add_option("--shard", *shard,
                  "I/N: run only shard I (0-based) of N, a stable split by item id");
  auto outs = std::make_shared<std::vector<std::string>>();
  auto dest = std::make_shared<std::string>("batch-merged");
  auto* merge = cmd->add_subcommand(
      "merge", "Join shards' outputs into one results.jsonl and report; name missing items");
  set_exit_codes(*merge, {kExitDone, kExitTaskFailed, kExitUsage, kExitStore});
  merge->add_option("outs", *outs, "The shards' output folders")->required();
  merge->add_option("--out", *dest, "Where the merged output goes")->capture_default_str();
  merge->callback([outs, dest, &exit_code] { exit_code = batch::merge_outputs(*outs, *dest); });
  cmd->callback([cmd, o, shard, &exit_code] {
    if (cmd->got_subcommand("merge")) return;
    if (o->manifest.empty()) {
      std::fprintf(stderr, "moat batch: no manifest given (usage: moat batch MANIFEST.toml)\n");
      exit_code = kExitUsage;
      return;
    }
    if (!shard->empty()) {
      auto s = batch::parse_shard(*shard);
      if (!s) {
        std::fprintf(stderr, "moat batch: %s\n", s.error().message().c_str());
        exit_code = kExitUsage;
        return;
      }
      o->shard = *s;
    }
    exit_code = batch::run_batch(*o);
  });
}

}  // namespace moat::agent
