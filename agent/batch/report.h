// agent/batch/report.h: OUT/report.html: totals, then one sortable row per item (failing
// first) with its status, check, cost, turns, diff size and links to its patch, session page
// and audit timeline.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace moat::agent::batch {

// The page for `results` (results.jsonl lines); `missing` are ids with no result (a merge's
// items that no shard finished), shown as rows of their own. Links are relative to OUT.
std::string report_html(const std::vector<nlohmann::json>& results,
                        const std::vector<std::string>& missing);

// Writes OUT/report.html; a failure is printed (the results are already safe on disk).
void write_report(const std::string& out_dir, const std::vector<nlohmann::json>& results,
                  const std::vector<std::string>& missing);

}  // namespace moat::agent::batch
