// sandbox/console_link.cc: the console channel: attaching it once, routing answers to asks.
#include "sandbox/console_link.h"

#include <sys/socket.h>
#include <unistd.h>

#include <openssl/crypto.h>


#include "base/log.h"
#include "base/random.h"
#include "base/ticks.h"

namespace moat::sandbox {

using nlohmann::json;

ConsoleLink::ConsoleLink(UniqueFd fd) : fd_(std::move(fd)), attached_(fd_.valid()) {}

ConsoleLink::~ConsoleLink() { close(); }

bool ConsoleLink::claim(std::string_view token, uid_t peer_uid, UniqueFd& fd) {
  std::lock_guard<std::mutex> lock(mu_);
  // The person's console runs as the person: a console of another uid is someone else, and is
  // refused before the token is looked at, so it cannot spend the person's (issue 26 item 3).
  if (peer_uid != owner_) return false;
  // Consumed next: a wrong guess from the person's uid also spends the token, so it cannot be
  // searched for.
  const std::string expected = std::exchange(token_, std::string());
  if (closed_ || attached_ || expected.empty() || token.size() != expected.size()) return false;
  if (CRYPTO_memcmp(token.data(), expected.data(), expected.size()) != 0) return false;
  fd_ = std::move(fd);
  attached_ = true;
  return true;
}

bool ConsoleLink::send(const json& m) {
  std::lock_guard<std::mutex> lock(send_mu_);
  return send_frame(fd_.get(), m).has_value();
}

void ConsoleLink::serve(FrameDecoder& decoder) {
  FrameReader frames(fd_.get(), std::move(decoder));
  for (;;) {
    auto frame = frames.read();
    if (!frame) MOAT_LOG_WARN("console channel: %s", frame.error().message().c_str());
    if (!frame || !frame->has_value()) break;  // broken, or hung up
    auto decoded = decode_client_frame(**frame, frames.decoder().last_payload_bytes());
    const AnswerMsg* answer = decoded ? std::get_if<AnswerMsg>(&*decoded) : nullptr;
    if (answer == nullptr) {
      // The console only answers: anything else is a broken console, which is closed.
      (void)send(ErrorMsg{"a console sends only 'answer' frames", "protocol", ""}.to_json());
      break;
    }
    std::lock_guard<std::mutex> lock(mu_);
    // Only a question still waiting takes an answer, and only its first one.
    auto it = waiting_.find(answer->ask);
    if (it != waiting_.end() && !it->second) {
      it->second = *answer;
      cv_.notify_all();
    }
  }
  // The console is gone (or is closed now): questions still waiting are answered no, and no
  // later one is asked.
  std::lock_guard<std::mutex> lock(mu_);
  closed_ = true;
  ::shutdown(fd_.get(), SHUT_RDWR);
  cv_.notify_all();
}

std::optional<ConsoleLink::Reply> ConsoleLink::ask(const AskMsg& ask,
                                                   const std::atomic<bool>& cancel) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!attached_ || closed_) return std::nullopt;
    waiting_[ask.ask] = std::nullopt;
  }
  const bool sent = send(ask.to_json());
  std::unique_lock<std::mutex> lock(mu_);
  // No answer (cancel, the console hung up, the session ended) is a no: nothing runs. The
  // call's cancel is a bare flag (sandbox/running_calls.h) that wakes no one: the wait
  // re-checks it at base/ticks.h's kAskCancel, with no thread per waiting ask (moatd holds at
  // most kMaxConcurrentCalls of them: MoatdBoundsTest counts its threads).
  while (sent && !waiting_[ask.ask] && !closed_ && !cancel.load())
    cv_.wait_for(lock, ticks::kAskCancel);
  Reply reply{waiting_[ask.ask]};
  waiting_.erase(ask.ask);
  return reply;
}

void ConsoleLink::close() {
  std::lock_guard<std::mutex> lock(mu_);
  closed_ = true;
  // Wakes serve()'s read; the fd itself is closed with the link, after serve() returned.
  if (fd_.valid()) ::shutdown(fd_.get(), SHUT_RDWR);
  cv_.notify_all();
}

void ConsoleRegistry::add(const std::string& session, std::weak_ptr<ConsoleLink> link) {
  std::lock_guard<std::mutex> lock(mu_);
  links_[session] = std::move(link);
}

void ConsoleRegistry::remove(const std::string& session) {
  std::lock_guard<std::mutex> lock(mu_);
  links_.erase(session);
}

std::shared_ptr<ConsoleLink> ConsoleRegistry::find(const std::string& session) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = links_.find(session);
  return it == links_.end() ? nullptr : it->second.lock();
}

std::optional<std::string> SessionConsole::open(UniqueFd spawned, ConsoleRegistry* registry,
                                                const std::string& session, uid_t owner) {
  if (spawned.valid()) {
    link_ = std::make_shared<ConsoleLink>(std::move(spawned));
    thread_ = std::thread([link = link_] {
      FrameDecoder decoder;
      link->serve(decoder);
    });
    return std::nullopt;
  }
  // A shared moatd: the client's console attaches on a connection of its own with this
  // token, which works once. `moat run` attaches it before the loop exists.
  std::string token = random_hex_or_abort(32);
  link_ = std::make_shared<ConsoleLink>(owner, token);
  registry->add(session, link_);
  return token;
}

void SessionConsole::close(ConsoleRegistry* registry, const std::string& session) {
  if (link_) {
    if (registry != nullptr) registry->remove(session);
    link_->close();
  }
  if (thread_.joinable()) thread_.join();
}

bool attach_console(ConsoleRegistry* registry, const std::string& session, const std::string& token,
                    uid_t peer_uid, UniqueFd& fd, FrameDecoder& decoder) {
  std::shared_ptr<ConsoleLink> link = registry == nullptr ? nullptr : registry->find(session);
  // One answer for every refusal: a wrong guess learns nothing about which check failed.
  if (!link || !link->claim(token, peer_uid, fd)) return false;
  (void)link->send(AttachedMsg{session}.to_json());
  link->serve(decoder);
  return true;
}

}  // namespace moat::sandbox
