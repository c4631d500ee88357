// tools/bash_output.cc: the rolling buffer, the spill file and the ceiling.
#include "tools/bash_output.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace moat::tools {
namespace {

Result<void> write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail(Error::from_errno("write", errno, "spill file"));
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return {};
}

// Length of the longest prefix that does not end inside a multi-byte UTF-8 sequence.
std::size_t complete_utf8_prefix(std::string_view s) {
  for (std::size_t back = 1; back <= 4 && back <= s.size(); ++back) {
    const auto c = static_cast<unsigned char>(s[s.size() - back]);
    if ((c & 0xC0) == 0x80) continue;  // a continuation byte: look further back
    const std::size_t need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    return need > back ? s.size() - back : s.size();
  }
  return s.size();
}

}  // namespace

BashOutput::BashOutput(Options options, std::atomic<bool>* kill)
    : options_(std::move(options)), kill_(kill) {}

std::uint64_t BashOutput::total_lines() const {
  return newlines_ + (total_bytes_ > 0 && !ends_with_newline_ ? 1 : 0);
}

void BashOutput::add(std::string_view chunk) {
  if (chunk.empty() || ceiling_hit_) return;
  // Past the ceiling only the bytes up to it count; then the command is killed.
  if (total_bytes_ + chunk.size() > options_.ceiling) {
    chunk = chunk.substr(0, options_.ceiling - total_bytes_);
    ceiling_hit_ = true;
    kill_->store(true);
  }
  total_bytes_ += chunk.size();
  newlines_ += static_cast<std::uint64_t>(std::count(chunk.begin(), chunk.end(), '\n'));
  if (!chunk.empty()) ends_with_newline_ = chunk.back() == '\n';
  buffer_.append(chunk);
  if (spilling_) {
    spill(chunk);
  } else if (total_bytes_ > kMaxBytes || total_lines() > kMaxLines) {
    // The first time past the limits: the buffer still holds everything, so the spill
    // file starts complete.
    spilling_ = true;
    spill(buffer_);
  }
  if (spilling_) trim();
  if (options_.progress) {
    pending_progress_.append(chunk);
    if (pending_progress_.size() > kMaxBytes)
      pending_progress_.erase(0, pending_progress_.size() - kMaxBytes);
    const auto now = std::chrono::steady_clock::now();
    if (now - last_progress_ >= options_.progress_interval) {
      // A chunk may end inside a UTF-8 sequence: hold those bytes back for the next frame,
      // so every frame is valid UTF-8 (it travels as a JSON string).
      const std::size_t cut = complete_utf8_prefix(pending_progress_);
      if (cut > 0) {
        options_.progress(sanitize_utf8(std::string_view(pending_progress_).substr(0, cut)));
        pending_progress_.erase(0, cut);
        last_progress_ = now;
      }
    }
  }
}

void BashOutput::finish() {
  if (options_.progress && !pending_progress_.empty())
    options_.progress(sanitize_utf8(pending_progress_));
  pending_progress_.clear();
}

void BashOutput::spill(std::string_view bytes) {
  if (!spill_error_.empty()) return;
  if (!spill_fd_.valid()) {
    auto fd = options_.open_spill ? options_.open_spill(&spill_path_)
                                  : Result<UniqueFd>(fail(std::string("no spill file")));
    if (!fd) {
      spill_error_ = fd.error().message();
      return;
    }
    spill_fd_ = std::move(*fd);
  }
  if (auto w = write_all(spill_fd_.get(), bytes); !w) spill_error_ = w.error().message();
}

void BashOutput::trim() {
  // Amortised: let the buffer grow to 4x before cutting it back to the last kMaxBytes + 1
  // bytes. One byte more than the limit guarantees a cut first line is never shown whole.
  if (buffer_.size() > 4 * kMaxBytes) buffer_.erase(0, buffer_.size() - (kMaxBytes + 1));
}

std::string BashOutput::render() const {
  if (total_bytes_ == 0) return "(no output)";
  const Truncation t = truncate_tail(buffer_, kMaxLines, kMaxBytes);
  std::string text = sanitize_utf8(t.text);
  if (!t.truncated) return text;
  const std::uint64_t total = total_lines();
  const std::string where = spill_error_.empty()
                                ? "Full output: " + spill_path_
                                : "The full output could not be saved (" + spill_error_ + ")";
  if (t.last_line_partial) {
    text += "\n\n[Showing the last " + format_size(t.text.size()) + " of line " +
            std::to_string(total) + " (over the " + format_size(kMaxBytes) + " limit). " + where +
            "]";
  } else {
    const std::uint64_t first = total - t.output_lines + 1;
    text += "\n\n[Showing lines " + std::to_string(first) + "-" + std::to_string(total) + " of " +
            std::to_string(total) +
            (t.truncated_by == "bytes" ? " (" + format_size(kMaxBytes) + " limit)" : "") + ". " +
            where + "]";
  }
  return text;
}

}  // namespace moat::tools
