// agent/steering_input.h: the loop's stdin in a run of typed lines without a terminal session
// (RunMode::kLines): the console's pipe, carrying the lines the person (or a script) typed that
// did not answer a question. Each is a steering message for the loop, delivered after the
// current batch. The console answers moatd's questions itself (agent/console.h).
#pragma once

#include <atomic>
#include <string>
#include <thread>

#include "agent/loop.h"

namespace moat::agent {

class SteeringInput {
 public:
  // Starts a thread reading `fd` line by line into `inbox` until end of input or close().
  SteeringInput(int fd, Inbox& inbox);
  ~SteeringInput() { close(); }
  SteeringInput(const SteeringInput&) = delete;
  SteeringInput& operator=(const SteeringInput&) = delete;

  // Stops reading.
  void close();

 private:
  void read_lines();
  void take_line(std::string line);

  int fd_;
  Inbox& inbox_;
  std::atomic<bool> stop_{false};
  std::thread reader_;
};

}  // namespace moat::agent
