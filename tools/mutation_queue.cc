// tools/mutation_queue.cc: tickets in arrival order; a key is granted to the oldest ticket
// naming it once no older ticket is still unnamed.
#include "tools/mutation_queue.h"

namespace moat::tools {

MutationQueue::Ticket& MutationQueue::Ticket::operator=(Ticket&& o) noexcept {
  if (this != &o) {
    release();
    queue_ = std::exchange(o.queue_, nullptr);
    seq_ = o.seq_;
  }
  return *this;
}

void MutationQueue::Ticket::release() {
  if (queue_ != nullptr) std::exchange(queue_, nullptr)->leave(seq_);
}

MutationQueue::Ticket MutationQueue::enter() {
  std::lock_guard lock(mu_);
  const std::uint64_t seq = next_++;
  live_.emplace(seq, std::nullopt);
  return Ticket(this, seq);
}

void MutationQueue::name(Ticket& ticket, const std::string& key) {
  // A ticket that already left (or never entered) takes the next place in line.
  if (ticket.queue_ != this) ticket = enter();
  {
    std::lock_guard lock(mu_);
    live_[ticket.seq()] = key;
  }
  cv_.notify_all();  // tickets behind this one may now know it is not theirs
}

void MutationQueue::acquire(Ticket& ticket, const std::string& key) {
  name(ticket, key);
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] {
    for (auto it = live_.begin(); it != live_.end() && it->first < ticket.seq(); ++it)
      if (!it->second.has_value() || *it->second == key) return false;
    return true;
  });
}

void MutationQueue::leave(std::uint64_t seq) {
  {
    std::lock_guard lock(mu_);
    live_.erase(seq);
  }
  cv_.notify_all();
}

MutationQueue& MutationQueue::process_default() {
  static MutationQueue queue;
  return queue;
}

}  // namespace moat::tools
