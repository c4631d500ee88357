// tools/read.cc: `read`. The whole operation runs in the worker, so a 10 MB file never
// crosses the worker boundary: only the at most kMaxBytes that the model sees do.
#include "tools/read.h"

#include <fcntl.h>
#include <unistd.h>
#include <sys/stat.h>

#include <cstring>
#include <memory>

#include "tools/image.h"
#include "tools/resolve.h"
#include "tools/truncate.h"

namespace moat::tools {
namespace {

// A file's bytes, read with read(2), not mmap: a file the sandboxed code truncates while
// we read it must give a short read, not a SIGBUS. The buffer is not zero-filled first
// (make_unique_for_overwrite): for a 10 MB file that would double the memory traffic.
struct FileBytes {
  std::unique_ptr<char[]> data;
  std::size_t size = 0;
  std::string_view view() const { return {data.get(), size}; }
};

Result<FileBytes> read_all(int fd, std::size_t size_hint) {
  FileBytes out;
  std::size_t capacity = size_hint + 1;  // +1: a read of 0 at the end confirms EOF
  out.data = std::make_unique_for_overwrite<char[]>(capacity);
  for (;;) {
    if (out.size == capacity) {
      if (capacity > kMaxReadFileBytes) return fail(Error{EFBIG, "file grew while reading"});
      auto bigger = std::make_unique_for_overwrite<char[]>(capacity * 2);
      std::memcpy(bigger.get(), out.data.get(), out.size);
      out.data = std::move(bigger);
      capacity *= 2;
    }
    const ssize_t n = ::read(fd, out.data.get() + out.size, capacity - out.size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail(Error::from_errno("read", errno));
    if (n == 0) break;
    out.size += static_cast<std::size_t>(n);
  }
  return out;
}

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// Byte offset where 1-based line `line` starts, or npos when the file has fewer lines.
std::size_t line_start(std::string_view text, std::size_t line) {
  std::size_t pos = 0;
  for (std::size_t l = 1; l < line; ++l) {
    const void* nl = std::memchr(text.data() + pos, '\n', text.size() - pos);
    if (nl == nullptr) return std::string_view::npos;
    pos = static_cast<std::size_t>(static_cast<const char*>(nl) - text.data()) + 1;
  }
  return pos < text.size() ? pos : std::string_view::npos;
}

std::size_t count_newlines(std::string_view text) {
  std::size_t n = 0;
  const char* p = text.data();
  const char* end = p + text.size();
  while (p < end) {
    const void* nl = std::memchr(p, '\n', static_cast<std::size_t>(end - p));
    if (nl == nullptr) break;
    ++n;
    p = static_cast<const char*>(nl) + 1;
  }
  return n;
}

ToolResult read_image(std::string_view bytes, const std::string& mime) {
  if (bytes.size() > kMaxImageBytes)
    return ToolResult::error("image is " + format_size(bytes.size()) + ", over the " +
                             format_size(kMaxImageBytes) + " limit of one image block");
  ToolResult r;
  r.content.push_back({{"type", "text"}, {"text", "Read image file [" + mime + "]"}});
  r.content.push_back({{"type", "image"}, {"mimeType", mime}, {"data", base64_encode(bytes)}});
  r.details = {{"mimeType", mime}, {"bytes", bytes.size()}};
  return r;
}

ToolResult read_text(std::string_view all, const nlohmann::json& args) {
  const std::string shown_path = args.value("path", std::string());
  const std::size_t total = all.empty() ? 0 : count_newlines(all) + (all.back() == '\n' ? 0 : 1);
  const std::size_t offset = args.value("offset", std::size_t{1});
  const std::size_t start = line_start(all, offset);
  if (start == std::string_view::npos) {
    if (total == 0 && offset == 1) return ToolResult::text("[empty file]");
    return ToolResult::error("offset " + std::to_string(offset) + " is beyond end of file (" +
                             std::to_string(total) + " lines)");
  }
  const bool user_limit = args.contains("limit");
  const std::size_t want = user_limit ? args["limit"].get<std::size_t>() : kMaxLines;
  // Cut the slice at `want` lines before truncating, so truncate_head only ever sees
  // what the caller asked for.
  std::string_view rest = all.substr(start);
  const std::size_t slice_end = line_start(rest, want + 1);
  std::string_view slice = slice_end == std::string_view::npos ? rest : rest.substr(0, slice_end);
  Truncation t = truncate_head(slice, kMaxLines, kMaxBytes);
  const std::size_t last = offset + t.output_lines - 1;
  const std::size_t next = last + 1;
  nlohmann::json details = {{"totalLines", total}, {"firstLine", offset}, {"lastLine", last}};
  if (t.first_line_exceeds_limit) {
    const std::size_t line_bytes = std::min(slice.find('\n'), slice.size());
    return ToolResult::text("[Line " + std::to_string(offset) + " is " + format_size(line_bytes) +
                            ", over the " + format_size(kMaxBytes) + " limit. Use bash: sed -n '" +
                            std::to_string(offset) + "p' " + shell_quote(shown_path) +
                            " | head -c " + std::to_string(kMaxBytes) + "]");
  }
  std::string text = sanitize_utf8(t.text);
  // Without a limit from the caller, stopping before the end is truncation; with one, it
  // is what was asked for and the notice only counts what is left.
  const bool truncated = t.truncated || (!user_limit && last < total);
  if (truncated || last < total) {
    if (!text.empty() && text.back() == '\n') text.pop_back();
    text += "\n\n[";
  }
  if (truncated) {
    text += "Showing lines " + std::to_string(offset) + "-" + std::to_string(last) + " of " +
            std::to_string(total) +
            (t.truncated_by == "bytes" ? " (" + format_size(kMaxBytes) + " limit)" : "") +
            ". Use offset=" + std::to_string(next) + " to continue.]";
  } else if (last < total) {
    text += std::to_string(total - last) + " more lines in file. Use offset=" +
            std::to_string(next) + " to continue.]";
  }
  ToolResult r = ToolResult::text(std::move(text));
  details["truncated"] = truncated;
  r.details = std::move(details);
  return r;
}

}  // namespace

ToolSpec read_spec() {
  ToolSpec s;
  s.name = "read";
  s.description =
      "Read the contents of a file. Supports text files and images (png, jpeg, gif, webp; "
      "detected from the file's bytes), which come back as image attachments (at most " +
      format_size(kMaxImageBytes) + "). Text output is truncated to " +
      std::to_string(kMaxLines) + " lines or " + format_size(kMaxBytes) +
      " (whichever is hit first); a truncated result ends with the offset to continue from. "
      "Use offset/limit for large files.";
  s.parameters = {
      {"type", "object"},
      {"properties",
       {{"path", {{"type", "string"}, {"description", "Path to the file (relative to the workspace or absolute)"}}},
        {"offset", {{"type", "integer"}, {"minimum", 1}, {"description", "Line number to start reading from (1-based)"}}},
        {"limit", {{"type", "integer"}, {"minimum", 1}, {"description", "Maximum number of lines to read"}}}}},
      {"required", {"path"}},
      {"additionalProperties", false}};
  return s;
}

ToolResult read_in_sandbox(const std::string& canonical, const nlohmann::json& args) {
  auto fd = open_canonical(canonical, O_RDONLY | O_NOCTTY | O_NONBLOCK);
  if (!fd) return ToolResult::error("cannot open " + canonical + ": " + fd.error().message());
  struct stat st{};
  if (::fstat(fd->get(), &st) != 0)
    return ToolResult::error("cannot stat " + canonical + ": " + std::strerror(errno));
  if (S_ISDIR(st.st_mode))
    return ToolResult::error(canonical + " is a directory; use ls to list it");
  if (!S_ISREG(st.st_mode))
    return ToolResult::error(canonical + " is not a regular file (device, fifo or socket)");
  const auto size = static_cast<std::size_t>(st.st_size);
  if (size > kMaxReadFileBytes)
    return ToolResult::error(canonical + " is " + format_size(size) + ", over the " +
                             format_size(kMaxReadFileBytes) +
                             " read limit; use bash (sed -n, head, tail) to look at parts of it");
  auto content = read_all(fd->get(), size);
  if (!content) return ToolResult::error("cannot read " + canonical + ": " + content.error().message());
  const std::string_view bytes = content->view();
  if (auto mime = sniff_image_mime(bytes.substr(0, 16))) return read_image(bytes, *mime);
  if (std::memchr(bytes.data(), '\0', std::min<std::size_t>(bytes.size(), 8192)) != nullptr)
    return ToolResult::error(canonical + " looks binary (" + format_size(size) +
                             "); inspect it with bash, e.g. xxd " + shell_quote(canonical) +
                             " | head");
  return read_text(bytes, args);
}

}  // namespace moat::tools
