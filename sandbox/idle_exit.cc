// sandbox/idle_exit.cc: a resident moatd's idle end (idle_exit.h).
#include "sandbox/idle_exit.h"

#include "base/ticks.h"

namespace moat::sandbox {

IdleExit::IdleExit(double seconds, const ListeningSocket& socket)
    : idle_(seconds), socket_(&socket) {}

bool IdleExit::is_over(std::size_t live_connections) {
  if (idle_.count() <= 0) return false;
  const auto now = Clock::now();
  if (live_connections > 0) {
    idle_since_ = now;
    return false;
  }
  if (!withdrawn_) {
    if (now - idle_since_ < idle_) return false;
    socket_->remove_path();
    withdrawn_ = true;
    idle_since_ = now;
    return false;
  }
  // One accept tick after the path went: a connect that found it has been queued and accepted.
  return now - idle_since_ >= ticks::kAcceptLoop;
}

}  // namespace moat::sandbox
