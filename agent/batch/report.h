// agent/batch/report.h: OUT/report.html: totals, then one sortable row per item (failing
// first) with its status, check, cost, turns, diff size and links to its patch, session page
// and audit timeline.
#pragma once

#include <string>
#include <vector>

#include "agent/batch/item_result.h"

namespace moat::agent::batch {

// The page for `results` (results.jsonl lines, decoded); `missing` are ids with no result (a
// merge's items that no shard finished), shown as rows of their own. Links are relative to OUT.
std::string report_html(const std::vector<ItemResult>& results,
                        const std::vector<std::string>& missing);

// Writes OUT/report.html; a failure is printed (the results are already safe on disk).
void write_report(const std::string& out_dir, const std::vector<ItemResult>& results,
                  const std::vector<std::string>& missing);

}  // namespace moat::agent::batch
