// sandbox/idle_exit.h: when a resident moatd (moatd --idle-exit) ends: once no client has been
// connected for the idle time. A session lives exactly as long as its client's connection.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

namespace moat::sandbox {

class IdleExit {
 public:
  // `seconds` <= 0: never. `socket_path` is the path serve_socket listens on.
  IdleExit(double seconds, std::string socket_path);

  // Called at each wake-up of the accept loop with the number of live connections. After the
  // idle time it removes the socket path (while this moatd listens no other can claim it, so
  // the path is still its own), so a new client starts a new moatd instead of connecting to
  // one that is going; it answers true one accept tick later, once a client that connected
  // before the path went has been accepted (and counted) or there is none.
  bool is_over(std::size_t live_connections);

 private:
  using Clock = std::chrono::steady_clock;
  std::chrono::duration<double> idle_;
  std::string socket_path_;
  Clock::time_point idle_since_ = Clock::now();
  bool withdrawn_ = false;
};

}  // namespace moat::sandbox
