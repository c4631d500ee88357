// sandbox/connection_limit.cc: connections at once per local user and in all (see the header).
#include "sandbox/connection_limit.h"

#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include "sandbox/protocol.h"
#include "sandbox/listen_socket.h"

namespace moat::sandbox {

Result<std::shared_ptr<void>> ConnectionLimit::take(uid_t uid) {
  std::lock_guard lock(mu_);
  std::size_t& mine = open_[uid];
  if (mine >= per_user_)
    return fail(Error{EAGAIN, "uid " + std::to_string(uid) + " has " + std::to_string(mine) +
                                  " connections open (the limit is " + std::to_string(per_user_) +
                                  "); close one first"});
  if (open_total_ >= total_)
    return fail(Error{EAGAIN, "moatd serves " + std::to_string(open_total_) +
                                  " connections (the limit is " + std::to_string(total_) +
                                  "); try again later"});
  ++mine;
  ++open_total_;
  // The slot's deleter gives it back; the pointer itself is never used.
  return std::shared_ptr<void>(this, [uid](ConnectionLimit* self) { self->give_back(uid); });
}

void ConnectionLimit::give_back(uid_t uid) {
  std::lock_guard lock(mu_);
  if (auto it = open_.find(uid); it != open_.end() && --it->second == 0) open_.erase(it);
  --open_total_;
}

Result<void> UnauthenticatedBytes::Share::set(std::size_t bytes) {
  if (budget_ == nullptr || bytes == held_) return {};
  MOAT_TRY(budget_->change(uid_, held_, bytes));
  held_ = bytes;
  return {};
}

Result<void> UnauthenticatedBytes::change(uid_t uid, std::size_t from, std::size_t to) {
  std::lock_guard lock(mu_);
  const auto it = held_.find(uid);
  const std::size_t mine = it == held_.end() ? 0 : it->second;
  const std::size_t mine_after = mine - from + to, total_after = held_total_ - from + to;
  if (to > from && mine_after > per_user_)
    return fail(Error{EAGAIN, "uid " + std::to_string(uid) + "'s connections that have not said "
                              "'hello' would hold " + std::to_string(mine_after) +
                              " bytes (the limit is " + std::to_string(per_user_) + ")"});
  if (to > from && total_after > total_)
    return fail(Error{EAGAIN, "connections that have not said 'hello' would hold " +
                                  std::to_string(total_after) + " bytes (the limit is " +
                                  std::to_string(total_) + "); try again later"});
  held_total_ = total_after;
  if (mine_after == 0) held_.erase(uid);
  else held_[uid] = mine_after;
  return {};
}

Result<std::shared_ptr<void>> take_or_refuse(int fd, ConnectionLimit& limit) {
  auto peer = peer_credentials(fd);
  Result<std::shared_ptr<void>> slot = fail(Error{0, "no peer credentials"});
  if (peer) slot = limit.take(peer->uid);
  if (!slot) {
    const std::string frame =
        encode_frame(ErrorMsg{slot.error().message(), "protocol", ""}.to_json());
    (void)::send(fd, frame.data(), frame.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    ::close(fd);
  }
  return slot;
}

}  // namespace moat::sandbox
