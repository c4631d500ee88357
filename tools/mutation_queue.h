// tools/mutation_queue.h: serialises edit and write per canonical path, in request order;
// calls on different paths run in parallel.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <utility>
#include <mutex>
#include <optional>
#include <string>

namespace moat::tools {

class MutationQueue {
 public:
  // A place in request order, taken when the call arrives (before its path is known).
  // Until a ticket names its key, later tickets wait for it: any key might be its key.
  class Ticket {
   public:
    Ticket() = default;
    Ticket(Ticket&& o) noexcept : queue_(std::exchange(o.queue_, nullptr)), seq_(o.seq_) {}
    Ticket& operator=(Ticket&& o) noexcept;
    Ticket(const Ticket&) = delete;
    Ticket& operator=(const Ticket&) = delete;
    ~Ticket() { release(); }
    void release();  // leaves the queue (done, or failed before acquiring)
    std::uint64_t seq() const { return seq_; }

   private:
    friend class MutationQueue;
    Ticket(MutationQueue* q, std::uint64_t seq) : queue_(q), seq_(seq) {}
    MutationQueue* queue_ = nullptr;
    std::uint64_t seq_ = 0;
  };

  Ticket enter();
  // Names the ticket's key without waiting: later tickets on other keys stop waiting for
  // it (a call whose path is known but whose approval is still pending holds only its path).
  void name(Ticket& ticket, const std::string& key);
  // Names the key, blocks until every earlier ticket has named a different key or left,
  // then holds the key until the ticket is released.
  void acquire(Ticket& ticket, const std::string& key);

  // The queue used when a CallContext names none (moatd names one per session).
  static MutationQueue& process_default();

 private:
  void leave(std::uint64_t seq);

  std::mutex mu_;
  std::condition_variable cv_;
  std::uint64_t next_ = 1;
  std::map<std::uint64_t, std::optional<std::string>> live_;  // seq -> key once named
};

}  // namespace moat::tools
