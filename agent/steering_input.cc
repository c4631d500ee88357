// agent/steering_input.cc: typed lines into the loop's inbox (steering_input.h).
#include "agent/steering_input.h"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "base/lf_lines.h"

namespace moat::agent {
namespace {

constexpr std::size_t kMaxLine = 64 * 1024;  // a line without end is taken in pieces

}  // namespace

SteeringInput::SteeringInput(int fd, Inbox& inbox) : fd_(fd), inbox_(inbox) {
  reader_ = std::thread([this] { read_lines(); });
}

void SteeringInput::close() {
  stop_ = true;
  if (reader_.joinable()) reader_.join();
}

void SteeringInput::read_lines() {
  std::string pending;
  char buf[4096];
  const bool terminal = ::isatty(fd_) == 1;
  while (!stop_.load()) {
    // A run in a background job must not read its terminal: the read would stop the whole
    // process with SIGTTIN. It reads once it is in the foreground again.
    if (terminal && ::tcgetpgrp(fd_) != ::getpgrp()) {
      ::poll(nullptr, 0, 100);
      continue;
    }
    // A timeout, so the destructor's stop is seen even when nobody types.
    pollfd pfd{fd_, POLLIN, 0};
    const int ready = ::poll(&pfd, 1, 100);
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) continue;
    const ssize_t n = ready > 0 ? ::read(fd_, buf, sizeof buf) : -1;
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    take_lf_lines(pending, std::string_view(buf, static_cast<std::size_t>(n)),
                  [this](std::string line) { take_line(std::move(line)); });
    // A "line" without end (a pasted file, a stream of bytes) is taken in bounded pieces.
    if (pending.size() >= kMaxLine) {
      take_line(pending.substr(0, kMaxLine));
      pending.erase(0, kMaxLine);
    }
  }
  if (!pending.empty()) take_line(pending);
}

void SteeringInput::take_line(std::string line) {
  if (!line.empty() && line.back() == '\r') line.pop_back();
  if (line.find_first_not_of(" \t") == std::string::npos) return;
  inbox_.steer(line);
  std::fprintf(stderr, "moat: message queued: the model gets it after the current step\n");
  std::fflush(stderr);
}

}  // namespace moat::agent
