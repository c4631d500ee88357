// policy/parse_cache.h: each policy file's parse, kept while the file is unchanged, so a moatd
// that serves hello after hello (resident or system) re-reads and re-parses only the files that
// changed (issue 30 point 2). The layers a load returns are still exactly the files' content.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "policy/schema.h"

namespace moat::policy {

// What says a file is the one that was parsed: a write changes its ctime (which no caller can
// set: utimensat sets mtime and atime only), a rename or a new file its inode, a truncation its
// size.
struct FileStamp {
  dev_t dev = 0;
  ino_t ino = 0;
  off_t size = 0;
  std::int64_t mtime_ns = 0;
  std::int64_t ctime_ns = 0;
  bool operator==(const FileStamp&) const = default;
};
FileStamp stamp_of(const struct stat& st);

// How long ago a file's last change (ctime) must be before its parse is kept. The kernel stamps
// a change with a clock that advances once a tick (1 to 10 ms): a second write within the tick
// of the read could leave every field of the stamp as it was, with other bytes (git's "racy
// clean" entries). A file changed this recently is read again at every load until it settles.
inline constexpr std::chrono::milliseconds kSettledAfter{100};
// Files kept at most (a system moatd sees each user's and each workspace's): past it the cache
// starts over, so it holds no more than this many parses.
inline constexpr std::size_t kMaxKeptParses = 256;

struct ParsedFile {
  PolicyFile file;
  std::vector<std::string> notices;  // what its parse said (unknown keys when lenient)
};

// Parses the text of one file; `key` says how (strict, a repository's file): a file parsed two
// ways is kept twice.
using ParseText = std::function<Result<ParsedFile>(std::string_view text)>;

// `path` (its last component not a symlink) as `parse` turns its bytes into a PolicyFile: the
// kept parse when the open file's stamp is the one it was parsed from, else read (at most
// kMaxPolicyFileBytes) and parsed now, and kept when the file did not change during the read
// and has settled.
Result<ParsedFile> parse_file_cached(const std::string& path, const std::string& key,
                                     const ParseText& parse);

// The text of an open policy file, at most kMaxPolicyFileBytes; errors name `path`.
Result<std::string> read_policy_text(int fd, const std::string& path);

struct ParseCacheCounts {
  std::uint64_t kept_used = 0;  // loads that took a kept parse
  std::uint64_t parsed = 0;     // files read and parsed
};
ParseCacheCounts parse_cache_counts();  // tests and benchmarks

}  // namespace moat::policy
