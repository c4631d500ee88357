// base/thread_set.h: threads that run to completion on their own and are joined once done.
// A finished thread that is never joined keeps its stack mapped (8 MiB by default), so a
// daemon that starts a thread per call or per connection must join them as it goes, not
// only when it stops.
#pragma once

#include <algorithm>
#include <atomic>
#include <functional>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

namespace moat {

// Not thread-safe itself: spawn, join_finished and join_all are called from one thread.
class ThreadSet {
 public:
  ThreadSet() = default;
  ThreadSet(const ThreadSet&) = delete;
  ThreadSet& operator=(const ThreadSet&) = delete;
  ~ThreadSet() { join_all(); }

  // Joins the threads that have finished, then starts `fn` on a new one.
  void spawn(std::function<void()> fn) {
    join_finished();
    auto done = std::make_shared<std::atomic<bool>>(false);
    std::thread t([fn = std::move(fn), done] {
      fn();
      done->store(true);  // last: after this the thread only returns
    });
    threads_.push_back({std::move(t), std::move(done)});
  }

  void join_finished() {
    std::erase_if(threads_, [](Entry& e) {
      if (!e.done->load()) return false;
      e.thread.join();
      return true;
    });
  }

  void join_all() {
    for (auto& e : threads_)
      if (e.thread.joinable()) e.thread.join();
    threads_.clear();
  }

  std::size_t size() const { return threads_.size(); }

 private:
  struct Entry {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };
  std::vector<Entry> threads_;
};

}  // namespace moat
