// agent/console_modes.cc: the plain and the RPC front ends of the console, and the choice of
// one per mode (console_modes.h).
#include "agent/console_modes.h"

#include <cstdio>

#include "agent/console_terminal.h"
#include "agent/rpc_console.h"
#include "agent/visible.h"

namespace moat::agent {
namespace {

// -p, --json: nobody is asked, so stdin stays unread and a question is declined at once.
class PlainFrontEnd final : public ConsoleFrontEnd {
 public:
  using ConsoleFrontEnd::ConsoleFrontEnd;
  void ask(const std::string& ask, const std::string&) override {
    link_.send_answer(ask, false, false);
  }
  void loop_output(std::string_view bytes) override {
    const std::string shown = visible(bytes, carry_);
    std::fwrite(shown.data(), 1, shown.size(), stdout);
    std::fflush(stdout);
  }

 private:
  std::string carry_;  // an escape sequence cut by a read, completed by the next
};

// --rpc: stdin carries commands; the RPC console checks them, answers moatd's questions itself
// and passes the loop's events on whole lines (agent/rpc_console.h).
class RpcFrontEnd final : public ConsoleFrontEnd {
 public:
  explicit RpcFrontEnd(ConsoleLink& link)
      : ConsoleFrontEnd(link),
        rpc_(stdout, [&link](const std::string& ask, bool allow, bool for_session) {
          link.send_answer(ask, allow, for_session);
        }) {}

  bool wants_stdin() const override { return !input_over_ && rpc_.wants_input(); }
  void input(std::string_view bytes) override { rpc_.input(bytes); }
  // Once the input has ended and the commands are all written, the loop sees its end.
  void input_ended() override {
    rpc_.input_ended();
    input_over_ = true;
    if (rpc_.for_loop().empty()) link_.end_loop_input();
  }
  std::string_view for_loop() const override { return rpc_.for_loop(); }
  void sent_to_loop(std::size_t n) override {
    rpc_.sent_to_loop(n);
    if (input_over_ && rpc_.for_loop().empty()) link_.end_loop_input();
  }
  void ask(const std::string& ask, const std::string& question) override {
    rpc_.ask(ask, question);
  }
  void channel_ended() override { rpc_.asks_gone(); }
  void loop_output(std::string_view bytes) override { rpc_.loop_output(bytes); }
  void loop_ended() override { rpc_.loop_output_ended(); }

 private:
  RpcConsole rpc_;
  bool input_over_ = false;
};

}  // namespace

std::unique_ptr<ConsoleFrontEnd> make_console_front_end(RunMode mode, ConsoleLink& link,
                                                        const std::string& first_prompt) {
  switch (mode) {
    case RunMode::kPrint:
    case RunMode::kJson: return std::make_unique<PlainFrontEnd>(link);
    case RunMode::kRpc: return std::make_unique<RpcFrontEnd>(link);
    case RunMode::kLines: return std::make_unique<TerminalFrontEnd>(link, false, "");
    case RunMode::kTerminal: return std::make_unique<TerminalFrontEnd>(link, true, first_prompt);
  }
  return nullptr;
}

}  // namespace moat::agent
