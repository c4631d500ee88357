// sandbox/session_pool.h: sessions built ahead of need in a moatd serving a socket (resident
// or system): a hello takes a pre-built session (session_prebuilt.h) that fits it and finishes
// it; one thread refills the pool once that hello's session is up. Each pooled session is used
// by one hello and destroyed with it: nothing of one session reaches the next.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "base/result.h"
#include "sandbox/session.h"
#include "sandbox/session_config.h"
#include "sandbox/session_prebuilt.h"

namespace moat::sandbox {

// moatd --pool's default: two sessions ready, so two commands started together both find one.
inline constexpr std::size_t kDefaultPoolSize = 2;
// How long after a hello's session is up the refill waits, so that the command the hello was
// for (a script's `moat sandbox exec`: about 10 ms of moatd's work) does not share the CPU with
// building the next session. A deadline, not a tick: nothing is polled.
inline constexpr std::chrono::milliseconds kRefillDelay{50};
// Shapes the pool keeps sessions for at once: the most recent hellos' (least recently used
// dropped first). Hellos of two users (or two policies' limits) that alternate each find theirs
// instead of re-shaping the pool at every hello, and a client cycling through shapes makes moatd
// hold at most kPoolShapes x size pre-built sessions.
inline constexpr std::size_t kPoolShapes = 4;

class SessionPool {
 public:
  // Keeps `size` sessions ready per shape (0: none; create() then builds each session fresh).
  // Nothing is built before the first create(): its config says what the next sessions are
  // built with (the ids, allow_without, the cgroup's limits); a later config that differs adds
  // its shape, the least recently used past kPoolShapes is dropped with its sessions.
  explicit SessionPool(std::size_t size);
  ~SessionPool();  // stops the refill, then kills and reaps every pooled keeper, removes cgroups
  SessionPool(const SessionPool&) = delete;
  SessionPool& operator=(const SessionPool&) = delete;

  // A pooled session that fits `config`, finished for it; else one built fresh, as
  // Session::create builds it. A pooled keeper that died or reported an error is discarded.
  Result<std::unique_ptr<Session>> create(const SessionConfig& config);

  struct Counts {
    std::uint64_t built = 0;      // pre-built sessions made
    std::uint64_t served = 0;     // hellos served by one
    std::uint64_t discarded = 0;  // found dead (or of an older shape) and destroyed
    std::size_t ready = 0;        // waiting now, over every shape
  };
  Counts counts() const;
  // Tests: returns once `ready` sessions wait (or `timeout` passed): false on the timeout.
  bool wait_ready(std::size_t ready, std::chrono::milliseconds timeout) const;

 private:
  // The pre-built sessions that fit, first one still waiting; the others are handed to `dead`.
  // `owner` (the hello's workspace owner) is what the shape's next sessions are made for.
  std::unique_ptr<PrebuiltSession> take(const SessionConfig& config, std::optional<IdOwner> owner,
                                        std::deque<std::unique_ptr<PrebuiltSession>>& dead);
  void refill(std::stop_token stop);

  const std::size_t size_;
  mutable std::mutex mu_;
  mutable std::condition_variable_any cv_;
  // A shape and its sessions ready for a hello of that shape.
  struct Shaped {
    SessionConfig shape;
    std::deque<std::unique_ptr<PrebuiltSession>> ready;
    // Its last hello's workspace owner: the next sessions' idmap user namespaces are made for it.
    std::optional<IdOwner> owner;
  };
  // The first shape short of `size_` sessions, most recent first; nullptr when none. Under mu_.
  Shaped* wanting();
  std::size_t ready_count() const;  // under mu_
  std::list<Shaped> shapes_;  // under mu_: the most recent hello's first, at most kPoolShapes
  bool refill_now_ = false;  // under mu_: a hello's session is up; the refill may run
  std::chrono::steady_clock::time_point refill_at_;  // under mu_: not before (kRefillDelay)
  Counts counts_;            // under mu_
  std::jthread refill_;      // declared last: it uses the members above
};

}  // namespace moat::sandbox
