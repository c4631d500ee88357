// sandbox/console_link.h: the person's channel into a session. Only the console connection
// answers `ask` verdicts; the agent's own connection never can (docs/security.md, "The
// person's answers"; docs/protocol.md, "The console channel").
#pragma once

#include <sys/types.h>

#include <nlohmann/json.hpp>

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "base/unique_fd.h"
#include "sandbox/protocol.h"

namespace moat::sandbox {

// One session's console: attached at spawn (a private moatd's --console-fd), or later by a
// connection that presents the session's one-time token (a shared moatd). At most one
// console ever attaches to a session, and a token works once.
class ConsoleLink {
 public:
  // A link a console attaches to with `token`, from a peer whose uid is `owner`.
  ConsoleLink(uid_t owner, std::string token) : owner_(owner), token_(std::move(token)) {}
  // A link attached from the start to `fd` (the private moatd's console socketpair end).
  explicit ConsoleLink(UniqueFd fd);
  ~ConsoleLink();
  ConsoleLink(const ConsoleLink&) = delete;
  ConsoleLink& operator=(const ConsoleLink&) = delete;

  // Takes the link for the connection on `fd`, whose SO_PEERCRED uid is `peer_uid`: only
  // from the session's own uid (checked first: another uid's claim leaves the token as it
  // was), with the session's token (compared in constant time), and only once (a claim from
  // the session's uid consumes the token whatever the outcome).
  // On success the link takes `fd`; on failure it stays the caller's.
  bool claim(std::string_view token, uid_t peer_uid, UniqueFd& fd);

  // Reads the console's frames until it hangs up, breaks the protocol or close() is
  // called: `answer` frames go to the question waiting for them; an answer nobody waits
  // for is dropped. `decoder` may already hold bytes that came with the attach frame.
  void serve(FrameDecoder& decoder);

  // What the console answered one question: the person's answer, or none when nobody
  // answered (a cancel, the console hanging up, the session ending): a deny nobody gave.
  struct Reply {
    std::optional<AnswerMsg> answer;
  };
  // Sends `ask` to the console and waits for the answer to its ask id. nullopt: no console
  // is attached, so no person can be asked (ask becomes deny).
  std::optional<Reply> ask(const AskMsg& ask, const std::atomic<bool>& cancel);

  // The session ended: wakes serve() and every waiting question; later asks get nullopt.
  void close();

  // One frame to the console; false when it is gone.
  bool send(const nlohmann::json& m);

 private:
  uid_t owner_ = static_cast<uid_t>(-1);
  std::mutex mu_;
  std::condition_variable cv_;
  std::string token_;  // empty once used (or never issued)
  UniqueFd fd_;        // the console's connection, once attached
  bool attached_ = false;
  bool closed_ = false;
  std::map<std::string, std::optional<AnswerMsg>> waiting_;  // ask id -> its answer
  std::mutex send_mu_;
};

// A shared moatd's sessions that wait for their console, by session id.
class ConsoleRegistry {
 public:
  void add(const std::string& session, std::weak_ptr<ConsoleLink> link);
  void remove(const std::string& session);
  std::shared_ptr<ConsoleLink> find(const std::string& session);

 private:
  std::mutex mu_;
  std::map<std::string, std::weak_ptr<ConsoleLink>> links_;
};

// A session's console as its connection holds it (interactive sessions only).
class SessionConsole {
 public:
  // The private moatd's socketpair end `spawned`, served on a thread of its own; without one,
  // a link registered in `registry` under `session` for a console of uid `owner` to attach
  // with the returned one-time token (the welcome carries it; it works once).
  std::optional<std::string> open(UniqueFd spawned, ConsoleRegistry* registry,
                                  const std::string& session, uid_t owner);
  const std::shared_ptr<ConsoleLink>& link() const { return link_; }
  // The session ended: no console attaches any more, waiting asks are answered unanswered.
  void close(ConsoleRegistry* registry, const std::string& session);

 private:
  std::shared_ptr<ConsoleLink> link_;
  std::thread thread_;  // serves an attached-at-spawn console
};

// A console connection's attach frame: the link of `session` in `registry`, claimed with
// `token` by `peer_uid` on `fd`, which it then serves until it hangs up. false (nothing
// claimed, and the same refusal whichever check failed) when no session waits for it.
bool attach_console(ConsoleRegistry* registry, const std::string& session, const std::string& token,
                    uid_t peer_uid, UniqueFd& fd, FrameDecoder& decoder);

}  // namespace moat::sandbox
