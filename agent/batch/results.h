// agent/batch/results.h: OUT/results.jsonl, one line per finished item, appended and synced
// as each item finishes, so a crash or a kill -9 loses no finished item.
#pragma once

#include <nlohmann/json.hpp>

#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "agent/batch/item_result.h"
#include "base/result.h"
#include "base/unique_fd.h"

namespace moat::agent::batch {

inline constexpr const char* kResultsFile = "results.jsonl";

// The whole lines of a results file, in order, as ItemResult's decoder reads them: every
// reader (resume, report, merge, apply) reads typed fields. A torn last line (the batch was
// killed while writing it) and lines that are not results (no string "id", or a field moat
// reads back with another type than moat writes) are skipped.
std::vector<ItemResult> parse_item_results(std::string_view text);
// The same lines as JSON (the batch e2e tests and bench read them by key).
std::vector<nlohmann::json> parse_results(std::string_view text);
// The file's lines; an empty list when it does not exist.
Result<std::vector<ItemResult>> read_results(const std::string& path);

// The ids of `results` (the items a --resume skips).
std::set<std::string> finished_ids(const std::vector<ItemResult>& results);

// Appends to OUT/results.jsonl. Opening it cuts a torn last line off first, so the next line
// starts on a line of its own.
class ResultsLog {
 public:
  static Result<std::unique_ptr<ResultsLog>> open(const std::string& out_dir);
  // One line, one write(), then fdatasync: the line is on disk when this returns.
  Result<void> append(const nlohmann::json& line);

 private:
  explicit ResultsLog(UniqueFd fd) : fd_(std::move(fd)) {}
  UniqueFd fd_;
  std::mutex mu_;
};

// Writes `data` to `path` through a temporary file, fsync and rename, then syncs the directory:
// the file is either absent or whole.
Result<void> write_file_durably(const std::string& path, std::string_view data);

}  // namespace moat::agent::batch
