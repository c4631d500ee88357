// sandbox/session_pool.cc: moatd's pool of sessions built ahead of need (see session_pool.h).
#include "sandbox/session_pool.h"

#include <algorithm>
#include <chrono>
#include <iterator>
#include <utility>

#include "base/log.h"

namespace moat::sandbox {
namespace {

// What a pooled session is built with: the hello's config without what only the hello knows
// (its workspace, binds, env, ...), which the pooled keeper gets with kFinish.
SessionConfig shape_of(const SessionConfig& config) {
  SessionConfig shape;
  shape.unprivileged_uid = config.unprivileged_uid;
  shape.unprivileged_gid = config.unprivileged_gid;
  shape.allow_without = config.allow_without;
  shape.handler = config.handler;
  shape.limits = config.limits;
  shape.user_cgroup = config.user_cgroup;  // a user's pooled session counts in their quota
  // What the init built ahead (moatd as root) makes of the view before the workspace is known.
  shape.read_only = config.read_only;
  shape.hostname = config.hostname;
  return shape;
}

}  // namespace

SessionPool::SessionPool(std::size_t size) : size_(size) {
  if (size_ == 0) return;
  refill_ = std::jthread([this](std::stop_token stop) { refill(stop); });
}

SessionPool::~SessionPool() {
  if (refill_.joinable()) {
    refill_.request_stop();
    refill_.join();
  }
  std::lock_guard<std::mutex> lock(mu_);
  shapes_.clear();  // each keeper killed and reaped, then its cgroup removed
}

std::unique_ptr<PrebuiltSession> SessionPool::take(
    const SessionConfig& config, std::optional<IdOwner> owner,
    std::deque<std::unique_ptr<PrebuiltSession>>& dead) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = std::find_if(shapes_.begin(), shapes_.end(),
                         [&](const Shaped& s) { return fits_shape(config, s.shape); });
  if (it == shapes_.end()) {
    // The next ones are built as it needs.
    shapes_.push_front(Shaped{shape_of(config), {}, owner});
    if (shapes_.size() > kPoolShapes) {  // the least recently used goes, with its sessions
      auto& gone = shapes_.back().ready;
      counts_.discarded += gone.size();
      std::move(gone.begin(), gone.end(), std::back_inserter(dead));
      shapes_.pop_back();
    }
    return nullptr;
  }
  shapes_.splice(shapes_.begin(), shapes_, it);  // most recently used first
  if (owner) it->owner = owner;
  auto& ready = shapes_.front().ready;
  while (!ready.empty()) {
    std::unique_ptr<PrebuiltSession> pre = std::move(ready.front());
    ready.pop_front();
    if (is_waiting(*pre)) return pre;
    ++counts_.discarded;
    dead.push_back(std::move(pre));
  }
  return nullptr;
}

SessionPool::Shaped* SessionPool::wanting() {
  for (Shaped& s : shapes_)
    if (s.ready.size() < size_) return &s;
  return nullptr;
}

std::size_t SessionPool::ready_count() const {
  std::size_t n = 0;
  for (const Shaped& s : shapes_) n += s.ready.size();
  return n;
}

Result<std::unique_ptr<Session>> SessionPool::create(const SessionConfig& config) {
  if (size_ == 0) return Session::create(config);
  std::deque<std::unique_ptr<PrebuiltSession>> dead;  // destroyed outside the lock
  std::unique_ptr<PrebuiltSession> pre = take(config, workspace_owner(config), dead);
  dead.clear();
  const bool pooled = pre != nullptr;
  Result<std::unique_ptr<Session>> session =
      pooled ? finish_session(std::move(pre), config) : Session::create(config);
  // A pooled session that could not be finished is gone; the hello is built fresh, so what it
  // is refused for (a workspace that is no longer there) is said as without a pool.
  if (!session && pooled) {
    MOAT_LOG_WARN("pool: %s", session.error().message().c_str());
    session = Session::create(config);
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (session && (*session)->describe().pooled) ++counts_.served;
  refill_now_ = true;  // after the hello's session is up: the refill does not slow it
  refill_at_ = std::chrono::steady_clock::now() + kRefillDelay;
  cv_.notify_all();
  return session;
}

void SessionPool::refill(std::stop_token stop) {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, stop, [this] { return refill_now_ && wanting() != nullptr; });
    // A later hello moves refill_at_ on: each one's command runs first.
    while (!stop.stop_requested() && std::chrono::steady_clock::now() < refill_at_)
      cv_.wait_until(lock, stop, refill_at_, [] { return false; });
    if (stop.stop_requested()) return;
    const Shaped* want = wanting();
    if (want == nullptr) continue;  // a hello took the shape away meanwhile
    const SessionConfig shape = want->shape;
    const std::optional<IdOwner> owner = want->owner;
    lock.unlock();
    auto built = prebuild_session(shape, owner);
    lock.lock();
    if (!built) {
      // Not retried until the next hello: a host that cannot build one now would spin here.
      MOAT_LOG_WARN("pool: %s", built.error().message().c_str());
      refill_now_ = false;
      continue;
    }
    ++counts_.built;
    // Its shape may have been dropped meanwhile: then the session is destroyed here.
    for (Shaped& s : shapes_)
      if (fits_shape(shape, s.shape) && s.ready.size() < size_) {
        s.ready.push_back(std::move(*built));
        break;
      }
    cv_.notify_all();
  }
}

SessionPool::Counts SessionPool::counts() const {
  std::lock_guard<std::mutex> lock(mu_);
  Counts c = counts_;
  c.ready = ready_count();
  return c;
}

bool SessionPool::wait_ready(std::size_t ready, std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, timeout, [&] { return ready_count() >= ready; });
}

}  // namespace moat::sandbox
