// agent/batch/merge.cc: joining shard outputs. An item finished by two shards (a rerun) keeps
// the result of the output named last.
#include "agent/batch/merge.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "agent/batch/report.h"
#include "agent/batch/results.h"
#include "agent/batch/runner.h"
#include "agent/cli.h"
#include "base/byte_strings.h"

namespace moat::agent::batch {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

Result<json> read_info(const std::string& out) {
  const fs::path file = fs::path(out) / kBatchInfoFile;
  std::ifstream in(file);
  if (!in) return fail(out + " is not a moat batch output (no " + kBatchInfoFile + ")");
  std::stringstream ss;
  ss << in.rdbuf();
  auto info = json::parse(ss.str(), nullptr, false);
  if (!info.is_object() || !info.contains("items") || !info["items"].is_array())
    return fail(file.string() + ": expected an object with an \"items\" array");
  return info;
}

// Copies an item's patch and folder (its pages and logs) so the merged report's links work.
void copy_item_files(const std::string& out, const std::string& dest, const ItemResult& r) {
  std::error_code ec;
  const std::string& id = r.id;
  if (r.patch)
    fs::copy(fs::path(out) / *r.patch, fs::path(dest) / *r.patch,
             fs::copy_options::overwrite_existing, ec);
  fs::create_directories(fs::path(dest) / "items" / id, ec);
  fs::copy(fs::path(out) / "items" / id, fs::path(dest) / "items" / id,
           fs::copy_options::recursive | fs::copy_options::overwrite_existing, ec);
}

// A shard's result names its files by absolute paths under the shard's OUT (the agent's and the
// check's audit logs, the session file); merged, they name the copies under the merge's OUT,
// relative to it like "patch" (issue 27 item 10: they named the shards' folders).
void relocate_paths(const std::string& out, ItemResult& r) {
  const fs::path from = fs::absolute(out).lexically_normal();
  auto relocate = [&](std::optional<std::string>& path) {
    if (!path) return;
    const fs::path p = fs::path(*path).lexically_normal();
    const fs::path rel = p.lexically_relative(from);
    if (p.is_absolute() && !rel.empty() && *rel.begin() != "..") path = rel.string();
  };
  relocate(r.audit.audit_log);
  relocate(r.session_file);
  if (r.check) relocate(r.check->audit.audit_log);
}

}  // namespace

int merge_outputs(const std::vector<std::string>& outs, const std::string& dest) {
  std::set<std::string> expected;
  std::map<std::string, ItemResult> by_id;
  std::string manifest;
  std::error_code ec;
  fs::create_directories(fs::path(dest) / "patches", ec);
  for (const auto& out : outs) {
    auto info = read_info(out);
    if (!info) {
      std::fprintf(stderr, "moat batch merge: %s\n", info.error().message().c_str());
      return kExitUsage;
    }
    for (const auto& id : (*info)["items"]) expected.insert(id.get<std::string>());
    manifest = info->value("manifest", manifest);
    auto results = read_results((fs::path(out) / kResultsFile).string());
    for (const auto& r : results ? *results : std::vector<ItemResult>{}) {
      ItemResult& kept = by_id[r.id] = r;
      if (fs::absolute(out) != fs::absolute(dest)) copy_item_files(out, dest, r);
      relocate_paths(out, kept);
    }
  }
  std::vector<ItemResult> merged;
  std::string lines;
  std::vector<std::string> not_passed;
  for (const auto& [id, r] : by_id) {
    merged.push_back(r);
    lines += dump_lossless(to_json(r)) + "\n";
    if (r.status != "passed") not_passed.push_back(id + " " + r.status.value_or("?"));
  }
  std::vector<std::string> missing;
  for (const auto& id : expected)
    if (by_id.count(id) == 0) missing.push_back(id);
  json info = {{"manifest", manifest}, {"items", json(expected)}, {"merged", outs}};
  (void)write_file_durably((fs::path(dest) / kBatchInfoFile).string(), info.dump(2) + "\n");
  if (auto w = write_file_durably((fs::path(dest) / kResultsFile).string(), lines); !w) {
    std::fprintf(stderr, "moat batch merge: %s\n", w.error().message().c_str());
    return kExitStore;
  }
  write_report(dest, merged, missing);
  std::fprintf(
      stderr, "moat batch merge: %zu result(s) from %zu output(s) into %s; %zu missing%s\n",
      merged.size(), outs.size(), dest.c_str(), missing.size(), missing.empty() ? "" : ":");
  for (const auto& id : missing) std::fprintf(stderr, "  %s\n", id.c_str());
  if (!not_passed.empty())
    std::fprintf(stderr, "moat batch merge: %zu item(s) failed or could not run:\n",
                 not_passed.size());
  for (const auto& line : not_passed) std::fprintf(stderr, "  %s\n", line.c_str());
  std::fprintf(stderr, "moat batch merge: report: %s\n",
               (fs::absolute(dest) / "report.html").lexically_normal().c_str());
  return missing.empty() && not_passed.empty() ? kExitDone : kExitTaskFailed;
}

}  // namespace moat::agent::batch
