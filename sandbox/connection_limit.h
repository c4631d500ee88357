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
  // Counted from accept, whatever the connection becomes (a session, a console): moatd.toml's
  // [quota] sessions counts sessions at their hello (sandbox/user_quota.h).
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

// The bytes held for connections that have not said hello yet (their partial frames), per
// local user and in all (kMaxUnauthenticatedBytes*): without it, each connection could make
// moatd hold a hello's worth, and a user's 64 connections 64 of them.
class UnauthenticatedBytes {
 public:
  UnauthenticatedBytes(std::size_t per_user, std::size_t total)
      : per_user_(per_user), total_(total) {}

  // One connection's share, given back when it is destroyed or set to 0 (after the hello).
  class Share {
   public:
    Share(UnauthenticatedBytes* budget, uid_t uid) : budget_(budget), uid_(uid) {}
    Share(const Share&) = delete;
    Share& operator=(const Share&) = delete;
    ~Share() { (void)set(0); }
    // The connection now holds `bytes`; an error naming the bound when that would break one
    // (the share is then unchanged). A null budget bounds nothing.
    Result<void> set(std::size_t bytes);

   private:
    UnauthenticatedBytes* budget_;
    uid_t uid_;
    std::size_t held_ = 0;
  };

 private:
  Result<void> change(uid_t uid, std::size_t from, std::size_t to);

  std::size_t per_user_;
  std::size_t total_;
  std::mutex mu_;
  std::map<uid_t, std::size_t> held_;
  std::size_t held_total_ = 0;
};

// A slot for the connection on `fd` (its peer's uid from SO_PEERCRED); beyond a bound, an
// error frame sent without waiting and `fd` closed: the accept loop never blocks on a client
// that does not read.
Result<std::shared_ptr<void>> take_or_refuse(int fd, ConnectionLimit& limit);

}  // namespace moat::sandbox
