// policy/parse_cache.cc: the kept parses of policy files (see parse_cache.h).
#include "policy/parse_cache.h"

#include <fcntl.h>
#include <time.h>

#include <map>
#include <mutex>
#include <optional>
#include <utility>

#include "base/sys.h"
#include "base/unique_fd.h"
#include "policy/file_limits.h"

namespace moat::policy {
namespace {

std::int64_t ns_of(const timespec& t) {
  return static_cast<std::int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

struct Kept {
  FileStamp stamp;
  ParsedFile parsed;
};

class ParseCache {
 public:
  std::optional<ParsedFile> find(const std::string& id, const FileStamp& stamp) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = kept_.find(id);
    if (it == kept_.end() || !(it->second.stamp == stamp)) return std::nullopt;
    ++counts_.kept_used;
    return it->second.parsed;
  }
  void keep(const std::string& id, const FileStamp& stamp, const ParsedFile& parsed) {
    std::lock_guard<std::mutex> lock(mu_);
    if (kept_.size() >= kMaxKeptParses && kept_.count(id) == 0) kept_.clear();
    kept_[id] = Kept{stamp, parsed};
  }
  void forget(const std::string& id) {
    std::lock_guard<std::mutex> lock(mu_);
    kept_.erase(id);
  }
  void count_parse() {
    std::lock_guard<std::mutex> lock(mu_);
    ++counts_.parsed;
  }
  ParseCacheCounts counts() {
    std::lock_guard<std::mutex> lock(mu_);
    return counts_;
  }

 private:
  std::mutex mu_;
  std::map<std::string, Kept> kept_;  // by the key and the path
  ParseCacheCounts counts_;
};

ParseCache& cache() {
  static ParseCache c;
  return c;
}

Result<FileStamp> stamp_of_fd(int fd, const std::string& path) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return fail(Error::from_errno("fstat", errno, path));
  return stamp_of(st);
}

// Its last change is older than kSettledAfter by the clock that stamps changes (a later write
// is then stamped later, whatever the tick).
bool is_settled(const FileStamp& stamp) {
  timespec now{};
  ::clock_gettime(CLOCK_REALTIME, &now);
  const auto settled = std::chrono::duration_cast<std::chrono::nanoseconds>(kSettledAfter).count();
  return ns_of(now) - stamp.ctime_ns >= settled;
}

}  // namespace

Result<std::string> read_policy_text(int fd, const std::string& path) {
  auto text = sys::read_to_end(fd, kMaxPolicyFileBytes);
  if (!text && text.error().code == EFBIG) return fail(path + ":1:1: file is larger than 1 MiB");
  if (!text) return fail(Error::from_errno("read", text.error().code, path));
  return text;
}

FileStamp stamp_of(const struct stat& st) {
  return FileStamp{st.st_dev, st.st_ino, st.st_size, ns_of(st.st_mtim), ns_of(st.st_ctim)};
}

Result<ParsedFile> parse_file_cached(const std::string& path, const std::string& key,
                                     const ParseText& parse) {
  MOAT_ASSIGN_OR_RETURN(UniqueFd fd, sys::open_path(path, O_RDONLY | O_NOCTTY | O_NOFOLLOW));
  const std::string id = key + '\0' + path;
  MOAT_ASSIGN_OR_RETURN(const FileStamp before, stamp_of_fd(fd.get(), path));
  if (std::optional<ParsedFile> kept = cache().find(id, before)) return std::move(*kept);
  MOAT_ASSIGN_OR_RETURN(std::string text, read_policy_text(fd.get(), path));
  MOAT_ASSIGN_OR_RETURN(const FileStamp after, stamp_of_fd(fd.get(), path));
  cache().count_parse();
  auto parsed = parse(text);
  // A file that changed while it was read, or too recently, is not kept: its stamp may not
  // tell this text from the next.
  if (parsed && before == after && is_settled(after))
    cache().keep(id, after, *parsed);
  else
    cache().forget(id);
  return parsed;
}

ParseCacheCounts parse_cache_counts() { return cache().counts(); }

}  // namespace moat::policy
