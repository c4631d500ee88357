// agent/batch/results.cc: results.jsonl (append, sync, torn-line recovery) and durable files.
#include "agent/batch/results.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "agent/batch/item_result.h"
#include "base/byte_strings.h"
#include "base/sys.h"

namespace moat::agent::batch {
namespace {

namespace fs = std::filesystem;

Result<void> sync_directory(const std::string& dir) {
  MOAT_ASSIGN_OR_RETURN(UniqueFd d, sys::open_path(dir, O_RDONLY | O_DIRECTORY));
  if (::fsync(d.get()) != 0) return fail(Error::from_errno("fsync", errno, dir));
  return {};
}

// Each whole line, parsed; what follows the last newline is a line the writer never finished.
template <typename Take>
void each_line(std::string_view text, Take take) {
  std::size_t start = 0;
  for (std::size_t nl; (nl = text.find('\n', start)) != std::string_view::npos; start = nl + 1)
    take(nlohmann::json::parse(text.substr(start, nl - start), nullptr, false));
}

}  // namespace

// A line is read back only when ItemResult's decoder takes it: every field has the type moat
// writes, so a line edited by hand into other types is skipped rather than trusted, and there
// is one reader of the line's types (item_result.h).
std::vector<ItemResult> parse_item_results(std::string_view text) {
  std::vector<ItemResult> out;
  each_line(text, [&out](const nlohmann::json& j) {
    if (auto r = item_result_from_json(j)) out.push_back(std::move(*r));
  });
  return out;
}

std::vector<nlohmann::json> parse_results(std::string_view text) {
  std::vector<nlohmann::json> out;
  each_line(text, [&out](nlohmann::json j) {
    if (item_result_from_json(j)) out.push_back(std::move(j));
  });
  return out;
}

Result<std::vector<ItemResult>> read_results(const std::string& path) {
  auto fd = sys::open_path(path, O_RDONLY);
  if (!fd && fd.error().code == ENOENT) return std::vector<ItemResult>{};
  if (!fd) return fail(fd.error());
  MOAT_ASSIGN_OR_RETURN(std::string text, sys::read_to_end(fd->get()));
  return parse_item_results(text);
}

std::set<std::string> finished_ids(const std::vector<ItemResult>& results) {
  std::set<std::string> ids;
  for (const auto& r : results) ids.insert(r.id);
  return ids;
}

Result<std::unique_ptr<ResultsLog>> ResultsLog::open(const std::string& out_dir) {
  const std::string path = (fs::path(out_dir) / kResultsFile).string();
  MOAT_ASSIGN_OR_RETURN(UniqueFd fd, sys::open_path(path, O_RDWR | O_CREAT | O_APPEND, 0644));
  MOAT_ASSIGN_OR_RETURN(std::string text, sys::read_to_end(fd.get()));
  const std::size_t whole = text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1;
  if (whole != text.size() && ::ftruncate(fd.get(), static_cast<off_t>(whole)) != 0)
    return fail(Error::from_errno("ftruncate", errno, path));
  MOAT_TRY(sync_directory(out_dir));  // the file itself survives a crash from here on
  return std::unique_ptr<ResultsLog>(new ResultsLog(std::move(fd)));
}

Result<void> ResultsLog::append(const nlohmann::json& line) {
  const std::string text = dump_lossless(line) + "\n";
  std::lock_guard<std::mutex> lock(mu_);
  MOAT_TRY(sys::write_all(fd_.get(), text.data(), text.size()));
  if (::fdatasync(fd_.get()) != 0) return fail(Error::from_errno("fdatasync", errno, kResultsFile));
  return {};
}

Result<void> write_file_durably(const std::string& path, std::string_view data) {
  const std::string tmp = path + ".tmp";
  {
    MOAT_ASSIGN_OR_RETURN(UniqueFd fd, sys::open_path(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644));
    MOAT_TRY(sys::write_all(fd.get(), data.data(), data.size()));
    if (::fsync(fd.get()) != 0) return fail(Error::from_errno("fsync", errno, tmp));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0)
    return fail(Error::from_errno("rename", errno, path));
  return sync_directory(fs::path(path).parent_path().string());
}

}  // namespace moat::agent::batch
