// sessions/jsonl.h: whole-line JSONL files: read, split at newlines, append one line atomically.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"

namespace moat::sessions {

// A line of a JSONL file, without its newline, and the byte offset where it starts.
struct Line {
  std::string_view text;
  size_t offset = 0;
};

// The whole lines of `data`: every byte up to the last '\n'. Bytes after it are a torn line
// (a write cut by a crash) and are not returned; their count goes to *torn_bytes.
std::vector<Line> whole_lines(std::string_view data, size_t* torn_bytes = nullptr);

Result<std::string> read_file(const std::string& path);

// Opens `path` for appending (O_APPEND | O_CLOEXEC). With `create`, the file must not exist
// yet and is created with `mode` (O_EXCL: never adopt a file someone else planted).
Result<UniqueFd> open_for_append(const std::string& path, bool create, mode_t mode);

// Writes `line` (which must end in '\n') with one write(2), so a reader never sees half of
// it unless the machine dies mid-write. A short write (disk full, file size limit) is undone
// by truncating back to `size_before`, so the file never keeps a torn line that later
// appends would glue onto.
Result<void> append_line(int fd, std::string_view line, off_t size_before);

// mkdir -p; directories this creates get `mode` (existing ones are left as they are).
Result<void> make_dirs(const std::string& path, mode_t mode);

// fsync of a directory, so a newly created file's name survives a crash too.
Result<void> fsync_dir(const std::string& dir);

std::string dirname_of(const std::string& path);

}  // namespace moat::sessions
