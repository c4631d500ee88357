// tests/unit/base/stop_flags_test.cc: the person's cancel (RunCancel) and a signal's edge
// (SignalStop), base/stop_flags.h.
#include "base/stop_flags.h"

#include <gtest/gtest.h>
#include <sys/syscall.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>

namespace moat {
namespace {

using namespace std::chrono_literals;

// Waits (no polling: a stop_callback wakes it) until `token` stops, `limit` at most.
bool stops_within(const std::stop_token& token, std::chrono::milliseconds limit) {
  std::mutex mu;
  std::condition_variable_any cv;
  const std::stop_callback wake(token, [&] {
    std::lock_guard<std::mutex> lock(mu);
    cv.notify_all();
  });
  std::unique_lock<std::mutex> lock(mu);
  return cv.wait_for(lock, limit, [&] { return token.stop_requested(); });
}

// The threads of this process blocked in read(2): the kernel's /proc/self/task/T/syscall
// starts with the number of the call a thread sleeps in.
int threads_in_read() {
  int n = 0;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream in(task.path() / "syscall");
    long nr = -1;
    if (in >> nr && nr == SYS_read) ++n;
  }
  return n;
}

TEST(SignalStop, ASignalStopsTheTokenFromAThreadBlockedInReadWithNoTimeout) {
  std::stop_source stop;
  const int before = threads_in_read();
  const SignalStop watch(SIGUSR1, [&] { stop.request_stop(); });
  ASSERT_TRUE(watch.watching());
  // Its thread sleeps in read(2) on the eventfd: no poll, no timeout, nothing ticks.
  for (int i = 0; i < 200 && threads_in_read() == before; ++i) std::this_thread::sleep_for(5ms);
  EXPECT_EQ(threads_in_read(), before + 1);
  EXPECT_FALSE(stop.stop_requested());
  ASSERT_EQ(::raise(SIGUSR1), 0);
  EXPECT_TRUE(stops_within(stop.get_token(), 5000ms));
}

int g_former_calls = 0;
void former_handler(int) { ++g_former_calls; }

TEST(SignalStop, OnceItGoesTheSignalHasItsFormerHandlerAndItsThreadHasEnded) {
  struct sigaction sa {};
  sa.sa_handler = former_handler;
  struct sigaction old {};
  ASSERT_EQ(::sigaction(SIGUSR2, &sa, &old), 0);
  int heard = 0;
  {
    const SignalStop watch(SIGUSR2, [&] { ++heard; });
    ASSERT_TRUE(watch.watching());
  }
  ASSERT_EQ(::raise(SIGUSR2), 0);
  EXPECT_EQ(g_former_calls, 1);
  EXPECT_EQ(heard, 0);
  ::sigaction(SIGUSR2, &old, nullptr);
}

TEST(RunCancel, AStopReachesTheCurrentTokenAndARenewedRunStartsUncancelled) {
  RunCancel cancel;
  const std::stop_token first = cancel.token();
  EXPECT_FALSE(first.stop_requested());
  cancel.request();
  EXPECT_TRUE(first.stop_requested());
  EXPECT_TRUE(cancel.token().stop_requested()) << "a stop before the run starts still counts";
  cancel.renew();
  const std::stop_token second = cancel.token();
  EXPECT_FALSE(second.stop_requested());
  cancel.renew();  // no stop since: the same run's token goes on
  cancel.request();
  EXPECT_TRUE(second.stop_requested());
}

}  // namespace
}  // namespace moat
