// tools/read.cc: `read`. The whole operation runs in the worker, so a 10 MB file never
// crosses the worker boundary: only the at most kMaxBytes that the model sees do.
#include "tools/read.h"

#include <fcntl.h>
#include <unistd.h>
#include <sys/stat.h>

#include <cstring>
#include <memory>

#include "base/base64.h"
#include "base/shell_words.h"
#include "tools/image.h"
#include "tools/resolve.h"
#include "tools/schema.h"
#include "tools/truncate.h"

namespace moat::tools {
namespace {

// What one pass over a text file yields: the line count, and the lines the caller asked
// for, kept up to kMaxBytes + 1 bytes (one more than the limit, so truncate_head always
// sees that there was more).
struct Scan {
  std::size_t total_lines = 0;
  std::string slice;                 // lines [offset, offset + want), capped
  std::size_t first_line_bytes = 0;  // full length of line `offset`, without its newline
};

// Streams the file through a fixed buffer with read(2): memory stays bounded whatever the
// file's size, a fresh worker does not fault in a file-sized buffer, and a file the
// sandboxed code truncates meanwhile gives a short read (mmap would raise SIGBUS).
Result<Scan> scan_lines(int fd, std::size_t offset, std::size_t want) {
  constexpr std::size_t kChunk = 256 * 1024;
  const std::size_t cap = kMaxBytes + 1;
  auto buf = std::make_unique_for_overwrite<char[]>(kChunk);
  Scan scan;
  std::size_t line = 1;
  std::size_t newlines = 0;
  char last = '\n';
  for (;;) {
    const ssize_t n = ::read(fd, buf.get(), kChunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail(Error::from_errno("read", errno));
    if (n == 0) break;
    const char* p = buf.get();
    const char* end = p + n;
    last = end[-1];
    while (p < end) {
      const char* nl =
          static_cast<const char*>(std::memchr(p, '\n', static_cast<std::size_t>(end - p)));
      const char* seg_end = nl ? nl + 1 : end;  // the segment keeps its newline
      if (line >= offset && line - offset < want && scan.slice.size() < cap)
        scan.slice.append(p, std::min<std::size_t>(static_cast<std::size_t>(seg_end - p),
                                                   cap - scan.slice.size()));
      if (line == offset) scan.first_line_bytes += static_cast<std::size_t>((nl ? nl : end) - p);
      if (nl == nullptr) break;
      ++newlines;
      ++line;
      p = nl + 1;
    }
  }
  scan.total_lines = newlines + (last != '\n' ? 1 : 0);
  return scan;
}

Result<std::string> read_whole(int fd, std::size_t size) {
  std::string out(size, '\0');
  std::size_t got = 0;
  while (got < size) {
    const ssize_t n = ::pread(fd, out.data() + got, size - got, static_cast<off_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail(Error::from_errno("pread", errno));
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  out.resize(got);
  return out;
}

ToolResult read_image(std::string_view bytes, const std::string& mime) {
  ToolResult r;
  r.content.push_back({{"type", "text"}, {"text", "Read image file [" + mime + "]"}});
  r.content.push_back({{"type", "image"}, {"mimeType", mime}, {"data", base64_encode(bytes)}});
  r.details = {{"mimeType", mime}, {"bytes", bytes.size()}};
  return r;
}

ToolResult read_text(int fd, const nlohmann::json& args) {
  const std::string shown_path = args.value("path", std::string());
  const std::size_t offset = args.value("offset", std::size_t{1});
  const bool user_limit = args.contains("limit");
  const std::size_t want = user_limit ? args["limit"].get<std::size_t>() : kMaxLines;
  auto scanned = scan_lines(fd, offset, want);
  if (!scanned)
    return ToolResult::error("cannot read " + shown_path + ": " + scanned.error().message());
  const Scan& scan = *scanned;
  const std::size_t total = scan.total_lines;
  if (offset > total) {
    if (total == 0 && offset == 1) return ToolResult::text("[empty file]");
    return ToolResult::error("offset " + std::to_string(offset) + " is beyond end of file (" +
                             std::to_string(total) + " lines)");
  }
  Truncation t = truncate_head(scan.slice, kMaxLines, kMaxBytes);
  const std::size_t last = offset + t.output_lines - 1;
  const std::size_t next = last + 1;
  if (t.first_line_exceeds_limit) {
    return ToolResult::text("[Line " + std::to_string(offset) + " is " +
                            format_size(scan.first_line_bytes) + ", over the " +
                            format_size(kMaxBytes) + " limit. Use bash: sed -n '" +
                            std::to_string(offset) + "p' " + shell_quote(shown_path) +
                            " | head -c " + std::to_string(kMaxBytes) + "]");
  }
  std::string text = sanitize_utf8(t.text);
  // Without a limit from the caller, stopping before the end is truncation; with one, it
  // is what was asked for and the notice only counts what is left.
  const bool truncated = t.truncated || (!user_limit && last < total);
  std::vector<std::string> notices;
  if (truncated) {
    notices.push_back("Showing lines " + std::to_string(offset) + "-" + std::to_string(last) +
                      " of " + std::to_string(total) +
                      (t.truncated_by == "bytes" ? " (" + format_size(kMaxBytes) + " limit)" : "") +
                      ". Use offset=" + std::to_string(next) + " to continue.");
  } else if (last < total) {
    notices.push_back(std::to_string(total - last) +
                      " more lines in file. Use offset=" + std::to_string(next) + " to continue.");
  }
  ToolResult r = ToolResult::text(append_notices(std::move(text), notices));
  r.details = {
      {"totalLines", total}, {"firstLine", offset}, {"lastLine", last}, {"truncated", truncated}};
  return r;
}

ToolSpec read_spec(const ToolLimits&) {
  ToolSpec s;
  s.description =
      "Read the contents of a file. Supports text files and images (png, jpeg, gif, webp; "
      "detected from the file's bytes), which come back as image attachments (at most " +
      format_size(kMaxImageBytes) + "). Text output is truncated to " + std::to_string(kMaxLines) +
      " lines or " + format_size(kMaxBytes) +
      " (whichever is hit first); a truncated result ends with the offset to continue from. "
      "Use offset/limit for large files.";
  s.parameters = object_schema(
      {{"path", property("string", "Path to the file (relative to the workspace or absolute)")},
       {"offset",
        property("integer", "Line number to start reading from (1-based)", {{"minimum", 1}})},
       {"limit", property("integer", "Maximum number of lines to read", {{"minimum", 1}})}},
      {"path"});
  return s;
}

ToolResult read_in_sandbox(const std::string& canonical, const nlohmann::json& args) {
  auto fd = open_canonical(canonical, O_RDONLY | O_NOCTTY | O_NONBLOCK);
  if (!fd) return ToolResult::error("cannot open " + canonical + ": " + fd.error().message());
  struct stat st {};
  if (::fstat(fd->get(), &st) != 0)
    return ToolResult::error("cannot stat " + canonical + ": " + std::strerror(errno));
  if (S_ISDIR(st.st_mode))
    return ToolResult::error(canonical + " is a directory; use ls to list it");
  if (!S_ISREG(st.st_mode))
    return ToolResult::error(canonical + " is not a regular file (device, fifo or socket)");
  const auto size = static_cast<std::size_t>(st.st_size);
  char head[8192];
  const ssize_t n = ::pread(fd->get(), head, sizeof head, 0);
  if (n < 0) return ToolResult::error("cannot read " + canonical + ": " + std::strerror(errno));
  const std::string_view first(head, static_cast<std::size_t>(n));
  if (auto mime = sniff_image_mime(first.substr(0, 16))) {
    if (size > kMaxImageBytes)
      return ToolResult::error("image is " + format_size(size) + ", over the " +
                               format_size(kMaxImageBytes) + " limit of one image block");
    auto bytes = read_whole(fd->get(), size);
    if (!bytes)
      return ToolResult::error("cannot read " + canonical + ": " + bytes.error().message());
    return read_image(*bytes, *mime);
  }
  if (std::memchr(first.data(), '\0', first.size()) != nullptr)
    return ToolResult::error(canonical + " looks binary (" + format_size(size) +
                             "); inspect it with bash, e.g. xxd " + shell_quote(canonical) +
                             " | head");
  return read_text(fd->get(), args);
}

std::vector<Guideline> read_guidance(const GrantedTools&) {
  return {{GuidelineSlot::kRead, "Read a file before changing it; read large files in ranges."}};
}

}  // namespace

const Tool kReadTool = {.name = "read",
                        .spec = &read_spec,
                        .file = FileOp{.access = PathAccess::kRead, .op = &read_in_sandbox},
                        .file_argument = "path",
                        .guidance = &read_guidance};

}  // namespace moat::tools
