// tests/unit/agent/run_support_test.cc: the interactive run's stdin reader (run_support.h):
// a line answers the question that waits for it, any other line steers the loop.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <thread>

#include "agent/run_support.h"

namespace moat::agent {
namespace {

using namespace std::chrono_literals;

class TerminalInputTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(pipe2(fds_, O_CLOEXEC), 0); }
  void TearDown() override {
    if (fds_[1] >= 0) close(fds_[1]);
    close(fds_[0]);
  }
  void type(const std::string& s) {
    ASSERT_EQ(write(fds_[1], s.data(), s.size()), static_cast<ssize_t>(s.size()));
  }
  void end_of_input() {
    close(fds_[1]);
    fds_[1] = -1;
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

TEST_F(TerminalInputTest, LinesWithoutAQuestionAreSteeringMessages) {
  TerminalInput in(fds_[0], inbox_);
  type("use the other file\n\n   \nand run the tests\r\n");
  EXPECT_EQ(steering(2), (std::vector<std::string>{"use the other file", "and run the tests"}))
      << "blank lines are not messages; CRLF ends a line";
}

TEST_F(TerminalInputTest, TheLineAfterAQuestionAnswersIt) {
  TerminalInput in(fds_[0], inbox_);
  auto answer = std::async(std::launch::async, [&] { return in.ask("rm -rf build?"); });
  EXPECT_EQ(answer.wait_for(100ms), std::future_status::timeout) << "it waits for the person";
  type("s\n");
  const auto a = answer.get();
  EXPECT_TRUE(a.allow);
  EXPECT_TRUE(a.for_session);
  type("thanks\n");
  EXPECT_EQ(steering(1), std::vector<std::string>{"thanks"});
}

TEST_F(TerminalInputTest, AnAnswerTypedAheadAnswersButASentenceStaysASteeringMessage) {
  TerminalInput in(fds_[0], inbox_);
  type("also update the docs\ny\n");
  const auto queued = steering(2);  // both read by now
  ASSERT_EQ(queued, (std::vector<std::string>{"also update the docs", "y"}));
  for (const auto& q : queued) inbox_.steer(q);  // back in the queue, in order
  auto answer = std::async(std::launch::async, [&] { return in.ask("write x?"); });
  EXPECT_EQ(answer.wait_for(100ms), std::future_status::timeout)
      << "the oldest queued line is a sentence, not an answer";
  type("n\n");
  EXPECT_FALSE(answer.get().allow);
  EXPECT_EQ(steering(2), (std::vector<std::string>{"also update the docs", "y"}));
  inbox_.steer("yes");
  EXPECT_TRUE(in.ask("again?").allow) << "a typed-ahead answer is taken at once";
}

TEST_F(TerminalInputTest, EndOfInputDeniesAWaitingQuestion) {
  TerminalInput in(fds_[0], inbox_);
  auto answer = std::async(std::launch::async, [&] { return in.ask("rm?"); });
  end_of_input();
  EXPECT_FALSE(answer.get().allow);
  EXPECT_FALSE(in.ask("and now?").allow) << "every later question too";
}

TEST_F(TerminalInputTest, CloseDeniesAQuestionNobodyAnswers) {
  TerminalInput in(fds_[0], inbox_);
  auto answer = std::async(std::launch::async, [&] { return in.ask("rm?"); });
  EXPECT_EQ(answer.wait_for(50ms), std::future_status::timeout);
  in.close();
  EXPECT_FALSE(answer.get().allow);
}

}  // namespace
}  // namespace moat::agent
