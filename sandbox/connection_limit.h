// sandbox/connection_limit.h: how many connections a shared moatd serves at once, per local
// user and in all. Each connection holds a thread, up to kMaxFrameBytes of a partial frame and
// kMaxRunningCallBytes of running calls, and after hello a sandbox: without a bound, one user
// opening connections in a loop takes moatd's memory and threads from every other user.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>

#include "base/result.h"

namespace moat::sandbox {

class ConnectionLimit {
 public:
  ConnectionLimit(std::size_t per_user, std::size_t total) : per_user_(per_user), total_(total) {}

  // A slot for one connection of `uid`, given back when the last copy of it is dropped; or an
  // error naming the bound a new connection would break.
  Result<std::shared_ptr<void>> take(uid_t uid);

 private:
  void give_back(uid_t uid);

  std::size_t per_user_;
  std::size_t total_;
  std::mutex mu_;
  std::map<uid_t, std::size_t> open_;
  std::size_t open_total_ = 0;
};

// A slot for the connection on `fd` (its peer's uid from SO_PEERCRED); beyond a bound, an
// error frame sent without waiting and `fd` closed: the accept loop never blocks on a client
// that does not read.
Result<std::shared_ptr<void>> take_or_refuse(int fd, ConnectionLimit& limit);

}  // namespace moat::sandbox
