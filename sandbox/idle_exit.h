// sandbox/idle_exit.h: when a resident moatd (moatd --idle-exit) ends: once no client has been
// connected for the idle time. A session lives exactly as long as its client's connection.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

#include "sandbox/listen_socket.h"

namespace moat::sandbox {

class IdleExit {
 public:
  // `seconds` <= 0: never. `socket` is the one serve_socket listens on; it outlives this.
  IdleExit(double seconds, const ListeningSocket& socket);

  // Called at each wake-up of the accept loop with the number of live connections. After the
  // idle time it removes the socket path if it is still this moatd's socket (a path removed
  // and bound since by a newer moatd stays that one's: ListeningSocket::remove_path), so a new
  // client starts a new moatd instead of connecting to one that is going; it answers true one
  // accept tick later, once a client that connected before the path went has been accepted
  // (and counted) or there is none.
  bool is_over(std::size_t live_connections);

 private:
  using Clock = std::chrono::steady_clock;
  std::chrono::duration<double> idle_;
  const ListeningSocket* socket_;
  Clock::time_point idle_since_ = Clock::now();
  bool withdrawn_ = false;
};

}  // namespace moat::sandbox
