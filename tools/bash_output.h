// tools/bash_output.h: what bash keeps of a command's output while it streams: a bounded
// rolling tail for the result, the full output spilled to a file once it passes the
// limits, a ceiling after which the command must be killed, throttled progress.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "base/result.h"
#include "base/unique_fd.h"
#include "tools/truncate.h"

namespace moat::tools {

class BashOutput {
 public:
  struct Options {
    std::uint64_t ceiling = 16ull << 20;  // bytes; past it `kill` is set
    std::chrono::milliseconds progress_interval{100};
    std::function<void(std::string_view)> progress;                 // may be empty
    std::function<Result<UniqueFd>(std::string* path)> open_spill;  // creates the spill file
  };
  BashOutput(Options options, std::atomic<bool>* kill);

  void add(std::string_view chunk);  // from the output callback (one thread)
  void finish();                     // flushes progress

  std::uint64_t total_bytes() const { return total_bytes_; }
  std::uint64_t total_lines() const;
  bool ceiling_hit() const { return ceiling_hit_; }
  const std::string& spill_path() const { return spill_path_; }
  const std::string& spill_error() const { return spill_error_; }
  // The tail (kMaxLines / kMaxBytes) plus the notice saying where the rest is.
  std::string render() const;

 private:
  void spill(std::string_view bytes);
  void trim();

  Options options_;
  std::atomic<bool>* kill_;
  std::string buffer_;  // everything until the spill starts, then a rolling tail
  std::uint64_t total_bytes_ = 0;
  std::uint64_t newlines_ = 0;
  bool ends_with_newline_ = false;
  UniqueFd spill_fd_;
  std::string spill_path_;
  std::string spill_error_;
  bool spilling_ = false;
  bool ceiling_hit_ = false;
  std::string pending_progress_;
  std::chrono::steady_clock::time_point last_progress_{};
};

}  // namespace moat::tools
