// tests/unit/tools/mutation_queue_test.cc: per-key serialisation in ticket order, other
// keys in parallel, and an unnamed earlier ticket holding later ones back.
#include "tools/mutation_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace moat::tools {
namespace {

using namespace std::chrono_literals;

TEST(MutationQueue, DifferentKeysAreHeldAtTheSameTime) {
  MutationQueue q;
  auto a = q.enter();
  auto b = q.enter();
  q.acquire(a, "/w/a");
  std::atomic<bool> got_b{false};
  std::thread t([&] {
    q.acquire(b, "/w/b");
    got_b = true;
  });
  t.join();  // would hang if b waited for a
  EXPECT_TRUE(got_b);
}

TEST(MutationQueue, SameKeyWaitsForTheEarlierTicket) {
  MutationQueue q;
  auto a = q.enter();
  auto b = q.enter();
  q.acquire(a, "/w/f");
  std::atomic<bool> got_b{false};
  std::thread t([&] {
    q.acquire(b, "/w/f");
    got_b = true;
  });
  std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(got_b);
  a.release();
  t.join();
  EXPECT_TRUE(got_b);
}

TEST(MutationQueue, ALaterTicketCannotOvertakeAnEarlierOneOnItsKey) {
  MutationQueue q;
  auto a = q.enter();
  auto b = q.enter();
  std::atomic<bool> got_b{false};
  std::thread t([&] {  // b names its key first; a has not said which key it wants
    q.acquire(b, "/w/f");
    got_b = true;
  });
  std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(got_b);
  q.acquire(a, "/w/f");  // a is earlier: it gets the key although b asked first
  EXPECT_FALSE(got_b);
  a.release();
  t.join();
  EXPECT_TRUE(got_b);
}

TEST(MutationQueue, AnEarlierTicketOnAnotherKeyDoesNotBlock) {
  MutationQueue q;
  auto a = q.enter();
  auto b = q.enter();
  q.acquire(a, "/w/other");
  q.acquire(b, "/w/f");  // returns at once
  SUCCEED();
}

// A call that knows its path but waits for a person's answer holds only that path.
TEST(MutationQueue, ANamedButUnacquiredTicketHoldsOnlyItsKey) {
  MutationQueue q;
  auto waiting = q.enter();
  auto later = q.enter();
  q.name(waiting, "/w/asked");
  std::atomic<bool> got{false};
  std::thread t([&] {
    q.acquire(later, "/w/other");
    got = true;
  });
  t.join();  // would hang if an unacquired ticket still held every key
  EXPECT_TRUE(got);
}

TEST(MutationQueue, ReleasingAnUnnamedTicketUnblocksLaterOnes) {
  MutationQueue q;
  auto a = q.enter();
  auto b = q.enter();
  std::thread t([&] { q.acquire(b, "/w/f"); });
  std::this_thread::sleep_for(20ms);
  a.release();  // a failed before it knew its path
  t.join();
  SUCCEED();
}

TEST(MutationQueue, AReleasedTicketTakesANewPlaceWhenReused) {
  MutationQueue q;
  auto a = q.enter();
  a.release();
  auto b = q.enter();
  q.acquire(b, "/w/f");
  std::atomic<bool> got_a{false};
  std::thread t([&] {
    q.acquire(a, "/w/f");  // behind b now, not a stale place ahead of everyone
    got_a = true;
  });
  std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(got_a);
  b.release();
  t.join();
  EXPECT_TRUE(got_a);
}

}  // namespace
}  // namespace moat::tools
