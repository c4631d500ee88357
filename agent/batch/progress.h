// agent/batch/progress.h: what a running batch tells the person: a line per finished item on
// stderr, on a terminal also a status line kept at the bottom (done / failed / running, cost
// so far, ETA), and with --json one event per item start and finish on stdout.
#pragma once

#include <chrono>
#include <cstddef>
#include <mutex>
#include <string>

#include "agent/batch/item_result.h"

namespace moat::agent::batch {

class Progress {
 public:
  // `already`: items of the shard done by earlier runs; `cost`: what they spent.
  Progress(std::size_t total, std::size_t already, double cost, bool json_events, bool terminal);
  void started(const std::string& id);
  void finished(const ItemResult& result);
  double cost();
  void close();  // ends the status line

 private:
  std::string counts() const;  // "[3/20 done, 1 failed, 2 running, $0.0100, eta 12s]"
  void show_status();

  std::mutex mu_;
  std::size_t total_, done_, failed_ = 0, running_ = 0, ran_ = 0;
  double cost_;
  bool json_, terminal_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace moat::agent::batch
