// tests/unit/agent/rpc_console_test.cc: what of the loop's output reaches an `--rpc` client
// (agent/rpc_console.h): documented events only, never an `ask`, and a `response` only to a
// command the console handed the loop (issue 26, item 2).
#include "agent/rpc_console.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

namespace moat::agent {
namespace {

// An RpcConsole whose stdout and notes are read back; answers sent to moatd are counted.
class RpcConsoleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    out_ = open_memstream(&out_buf_, &out_size_);
    notes_ = open_memstream(&notes_buf_, &notes_size_);
    console_ = std::make_unique<RpcConsole>(
        out_, [this](const std::string&, bool, bool) { ++answers_; }, notes_);
  }
  void TearDown() override {
    console_.reset();
    std::fclose(out_);
    std::fclose(notes_);
    std::free(out_buf_);
    std::free(notes_buf_);
  }
  std::string out() {
    std::fflush(out_);
    return std::string(out_buf_, out_size_);
  }
  std::string notes() {
    std::fflush(notes_);
    return std::string(notes_buf_, notes_size_);
  }
  long note_lines() {
    const std::string n = notes();
    return std::count(n.begin(), n.end(), '\n');
  }

  FILE* out_ = nullptr;
  FILE* notes_ = nullptr;
  char* out_buf_ = nullptr;
  char* notes_buf_ = nullptr;
  std::size_t out_size_ = 0, notes_size_ = 0;
  int answers_ = 0;
  std::unique_ptr<RpcConsole> console_;
};

TEST_F(RpcConsoleTest, ALoopsAskNeverReachesTheClient) {
  console_->loop_output(
      R"({"type":"ask","ask":"a1","question":"bash: rm -rf ~","choices":["allow_once"]})"
      "\n");
  EXPECT_EQ(out(), "");
  EXPECT_NE(notes().find("`ask` comes from the console only"), std::string::npos) << notes();
}

TEST_F(RpcConsoleTest, MalformedAndUndocumentedLinesAreDroppedAndNoted) {
  const std::vector<std::string> forged = {
      "not json",
      R"(["type","note"])",
      R"({"message":"no type"})",
      R"({"type":"answered","ask":"a1"})",
      R"({"type":"note","message":"hi","ask":"a1"})",
      R"({"type":"note","message":7})",
      R"({"type":"tool_output","id":"c1"})",
      R"({"type":"ask","type":"note","message":"x"})",  // two `type`s: the last one counts
      R"({"type":"state","id":"s","model":"m","running":false,"totals":{},"session_file":null,"audit_log":null})",
  };
  for (const std::string& line : forged) console_->loop_output(line + "\n");
  // The duplicate-key line parses (the last `type` wins) as a note: it passes, written as the
  // console read it, so no client reads an `ask` in it.
  EXPECT_EQ(out(), "{\"type\":\"note\",\"message\":\"x\"}\n");
  EXPECT_EQ(note_lines(), static_cast<long>(forged.size() - 1))
      << notes();
}

TEST_F(RpcConsoleTest, DocumentedEventsPassAsTheyWereWritten) {
  const std::string lines =
      R"({"type":"turn_start","turn":1})" "\n"
      R"({"type":"text_delta","text":"h\u00e9"})" "\n"
      R"({"type":"tool_call_end","duration_ms":3,"exit_code":null,"id":"c","is_error":false,"output":"","tool":"bash"})" "\n";
  // The loop writes events as json_line does (type first, then the keys in order); a line
  // may arrive in pieces.
  console_->loop_output(lines.substr(0, 17));
  console_->loop_output(lines.substr(17));
  EXPECT_EQ(out(), lines);
  EXPECT_EQ(notes(), "");
}

// A response is the console's to vouch for: only to a line it handed the loop, once, with that
// line's id and command; never to an `answer`, which the console keeps.
TEST_F(RpcConsoleTest, AResponsePassesOnlyOnceForACommandTheLoopWasHanded) {
  console_->input(R"({"type":"get_state","id":"g"})" "\n");
  console_->input(R"({"type":"answer","id":"x","ask":"a9","decision":"allow_once"})" "\n");
  const std::string console_written = out();  // the answer's refusal: no such question
  ASSERT_NE(console_written.find("\"line\":2"), std::string::npos) << console_written;
  const std::string ok =
      R"({"type":"response","command":"get_state","id":"g","line":1,"success":true})" "\n";
  console_->loop_output(
      R"({"type":"response","id":"x","command":"answer","line":2,"success":true})" "\n");
  console_->loop_output(
      R"({"type":"response","id":"h","command":"get_state","line":1,"success":true})" "\n");
  console_->loop_output(
      R"({"type":"response","id":"g","command":"get_state","line":7,"success":true})" "\n");
  console_->loop_output(ok);
  console_->loop_output(ok);  // a second response to the same line
  EXPECT_EQ(out(), console_written + ok);
  EXPECT_EQ(note_lines(), 4) << notes();
}

TEST_F(RpcConsoleTest, AnOverlongLineIsDroppedAndTheNextOnePasses) {
  console_->loop_output("{\"type\":\"note\",\"message\":\"");
  const std::string mib(1u << 20, 'x');
  for (int i = 0; i < 17; ++i) console_->loop_output(mib);
  console_->loop_output("\"}\n{\"type\":\"turn_end\",\"turn\":1}\n");
  EXPECT_EQ(out(), "{\"type\":\"turn_end\",\"turn\":1}\n");
  EXPECT_NE(notes().find("longer than"), std::string::npos) << notes();
}

}  // namespace
}  // namespace moat::agent
