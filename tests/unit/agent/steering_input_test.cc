// tests/unit/agent/steering_input_test.cc: the loop's stdin reader in a run of typed lines
// (agent/steering_input.h): each line the console passes on steers the loop.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "agent/steering_input.h"

namespace moat::agent {
namespace {

using namespace std::chrono_literals;

class SteeringInputTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(pipe2(fds_, O_CLOEXEC), 0); }
  void TearDown() override {
    if (fds_[1] >= 0) close(fds_[1]);
    close(fds_[0]);
  }
  void type(const std::string& s) {
    ASSERT_EQ(write(fds_[1], s.data(), s.size()), static_cast<ssize_t>(s.size()));
  }
  // Waits until the inbox holds `n` steering messages (the reader is a thread of its own).
  std::vector<std::string> steering(std::size_t n) {
    std::vector<std::string> all;
    for (int i = 0; i < 500 && all.size() < n; ++i) {
      auto more = inbox_.take_steering();
      all.insert(all.end(), more.begin(), more.end());
      if (all.size() < n) std::this_thread::sleep_for(10ms);
    }
    return all;
  }
  int fds_[2] = {-1, -1};
  Inbox inbox_;
};

TEST_F(SteeringInputTest, LinesWithoutAQuestionAreSteeringMessages) {
  SteeringInput in(fds_[0], inbox_);
  type("use the other file\n\n   \nand run the tests\r\n");
  EXPECT_EQ(steering(2), (std::vector<std::string>{"use the other file", "and run the tests"}))
      << "blank lines are not messages; CRLF ends a line";
}

}  // namespace
}  // namespace moat::agent
