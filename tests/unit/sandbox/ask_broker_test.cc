// tests/unit/sandbox/ask_broker_test.cc: an ask verdict put to the person over a console
// channel (a socketpair, a fake console on the other end), answered with typed messages.
#include "sandbox/ask_broker.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "sandbox/protocol.h"

namespace moat::sandbox {
namespace {

using nlohmann::json;

policy::Decision an_ask() {
  policy::Decision d;
  d.verdict = policy::Verdict::kAsk;
  d.deciding = {"user.make", "user", "/u/10.toml", 3};
  d.decided_by = policy::DecidedBy::kPolicy;
  d.reason = "builds run code";
  return d;
}

// moatd's end of the console channel served as a session serves it; the test plays the
// person's console on the other end.
class AskBrokerTest : public ::testing::Test {
 protected:
  AskBrokerTest() {
    int sv[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    console_ = UniqueFd(sv[1]);
    link_ = std::make_shared<ConsoleLink>(UniqueFd(sv[0]));
    serving_ = std::thread([link = link_] {
      FrameDecoder decoder;
      link->serve(decoder);
    });
    broker_.set_console(link_);
  }
  ~AskBrokerTest() override {
    link_->close();
    serving_.join();
  }

  // The next frame the console receives; null when the channel closed.
  json next_frame() {
    char buf[65536];
    for (;;) {
      auto frame = decoder_.next();
      if (!frame || frame->has_value()) return frame ? **frame : json();
      ssize_t n = ::read(console_.get(), buf, sizeof buf);
      if (n <= 0) return json();
      decoder_.feed(std::string_view(buf, static_cast<std::size_t>(n)));
    }
  }

  AskBroker broker_{false};
  UniqueFd console_;
  FrameDecoder decoder_;
  std::shared_ptr<ConsoleLink> link_;
  std::thread serving_;
  std::atomic<bool> cancel_{false};
};

TEST_F(AskBrokerTest, AnAllowForTheSessionIsThePersonsAndIsNotAskedAgain) {
  json asked;
  std::thread person([&] {
    asked = next_frame();
    auto ask = AskMsg::from_json(asked);
    ASSERT_TRUE(ask.has_value());
    EXPECT_TRUE(send_message(console_.get(), AnswerMsg{ask->ask, true, true}).has_value());
  });
  json answer;
  policy::Decision d = broker_.ask(an_ask(), "call-1", "the command 'make'", cancel_, answer);
  person.join();
  EXPECT_EQ(asked["id"], "call-1");
  EXPECT_EQ(asked["question"],
            "the command 'make' needs your approval: rule user.make (user) says ask: builds run "
            "code");
  EXPECT_EQ(asked["rule"], rule_json(an_ask().deciding));
  EXPECT_EQ(d.verdict, policy::Verdict::kAllow);
  EXPECT_EQ(d.decided_by, policy::DecidedBy::kUser);
  EXPECT_EQ(answer["answer"], "allow");
  EXPECT_EQ(answer["scope"], "session");
  EXPECT_EQ(answer["channel"], "console");
  EXPECT_TRUE(answer.contains("latency_ms"));

  json again;
  d = broker_.ask(an_ask(), "call-2", "the command 'make'", cancel_, again);
  EXPECT_EQ(d.verdict, policy::Verdict::kAllow);
  EXPECT_EQ(again["remembered"], true) << "answered from memory, no second question";
}

TEST_F(AskBrokerTest, ADenyOnceIsThePersonsAndIsAskedAgainNextTime) {
  std::thread person([&] {
    for (int i = 0; i < 2; ++i) {
      auto ask = AskMsg::from_json(next_frame());
      ASSERT_TRUE(ask.has_value());
      EXPECT_TRUE(send_message(console_.get(), AnswerMsg{ask->ask, false, false}).has_value());
    }
  });
  json answer;
  policy::Decision d = broker_.ask(an_ask(), "call-1", "writing '/w/x'", cancel_, answer);
  EXPECT_EQ(d.verdict, policy::Verdict::kDeny);
  EXPECT_EQ(d.decided_by, policy::DecidedBy::kUser);
  EXPECT_EQ(d.reason, "the person declined");
  EXPECT_EQ(answer["answer"], "deny");
  EXPECT_EQ(answer["scope"], "once");
  json second;
  d = broker_.ask(an_ask(), "call-2", "writing '/w/x'", cancel_, second);
  person.join();
  EXPECT_EQ(d.verdict, policy::Verdict::kDeny);
  EXPECT_EQ(second["answer"], "deny");
}

TEST_F(AskBrokerTest, AConsoleThatHangsUpIsADenyNobodyGave) {
  std::thread person([&] {
    EXPECT_EQ(next_frame().value("type", ""), "ask");
    ::shutdown(console_.get(), SHUT_RDWR);
  });
  json answer;
  policy::Decision d = broker_.ask(an_ask(), "call-1", "the command 'make'", cancel_, answer);
  person.join();
  EXPECT_EQ(d.verdict, policy::Verdict::kDeny);
  EXPECT_EQ(d.decided_by, policy::DecidedBy::kPolicy) << "nobody decided it";
  EXPECT_EQ(d.reason, "nobody answered (the call was cancelled or the console hung up)");
  EXPECT_TRUE(answer.is_null());
}

TEST(AskBroker, AHeadlessSessionOrAVerdictOtherThanAskIsLeftAsItIs) {
  std::atomic<bool> cancel{false};
  json answer;
  AskBroker headless(true);
  EXPECT_EQ(headless.ask(an_ask(), "c", "x", cancel, answer).verdict, policy::Verdict::kAsk);
  AskBroker interactive(false);
  policy::Decision allow = an_ask();
  allow.verdict = policy::Verdict::kAllow;
  EXPECT_EQ(interactive.ask(allow, "c", "x", cancel, answer).verdict, policy::Verdict::kAllow);
  EXPECT_EQ(interactive.ask(an_ask(), "c", "x", cancel, answer).verdict, policy::Verdict::kAsk)
      << "no console attached: nobody can answer";
  EXPECT_TRUE(answer.is_null());
}

}  // namespace
}  // namespace moat::sandbox
