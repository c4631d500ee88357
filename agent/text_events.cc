// agent/text_events.cc: the text rendering of a run's events (text_events.h). What the loop
// process writes passes the console, which makes its control characters visible.
#include "agent/text_events.h"

#include <cstdio>
#include <mutex>
#include <string>

#include "agent/host_files.h"
#include "agent/visible.h"

namespace moat::agent {
namespace {

using nlohmann::json;

std::string str(const json& e, const char* key) {
  auto it = e.find(key);
  return it != e.end() && it->is_string() ? it->get<std::string>() : std::string();
}

class TextEventSink final : public EventSink {
 public:
  TextEventSink() = default;
  void emit(const json& e) override {
    std::lock_guard<std::mutex> lock(mu_);
    const std::string type = str(e, "type");
    if (type == "answer") return answer(e);
    if (type == "tool_call_start")
      return status("  > " + str(e, "tool") + ": " + one_line(str(e, "summary"), 160));
    if (type == "tool_call_end") return tool_result(e);
    if (type == "result") return result(e);
    if (type == "error") said_ = str(e, "message");
    if (const std::string lines = event_status_lines(e); !lines.empty()) {
      end_line();
      std::fputs(lines.c_str(), stderr);
      std::fflush(stderr);
    }
    // session, turn_start, turn_end, tool_output, text_delta: answers are shown whole.
  }

 private:
  void end_line() { std::fflush(stdout); }

  void status(const std::string& line) {
    end_line();
    std::fprintf(stderr, "%s\n", line.c_str());
    std::fflush(stderr);
  }

  // Print mode: an answer with calls is progress (stderr); one without is the final answer
  // unless another comes after it (a follow-up, a steering message), so it is held.
  void answer(const json& e) {
    end_line();
    if (!held_.empty()) to_stderr(held_);
    const std::string t = str(e, "text");
    held_.clear();
    if (e.value("tool_calls", 0) > 0) to_stderr(t);
    else held_ = t.empty() ? std::string() : t;
  }

  static void to_stderr(const std::string& t) {
    if (t.empty()) return;
    std::fprintf(stderr, "%s%s", t.c_str(), t.back() == '\n' ? "" : "\n");
    std::fflush(stderr);
  }

  // The tail of a result's text: for a test run, the last lines say whether it passed.
  void tool_result(const json& e) {
    const std::string text = str(e, "output");
    const std::string tail = text.size() > 4000 ? "..." + text.substr(text.size() - 4000) : text;
    std::string out = e.value("is_error", false) ? "    [error]\n" : "    [ok]\n";
    for (std::size_t start = 0; start < tail.size();) {
      const std::size_t nl = tail.find('\n', start);
      out += "    | " + tail.substr(start, nl == std::string::npos ? nl : nl - start) + "\n";
      if (nl == std::string::npos) break;
      start = nl + 1;
    }
    end_line();
    std::fputs(out.c_str(), stderr);
    std::fflush(stderr);
  }

  void result(const json& e);

  std::mutex mu_;
  std::string held_;  // print mode: the answer that is final unless another comes
  std::string said_;  // the last error event's message (the result does not repeat it)
};

const char* stop_text(const std::string& stop) {
  if (stop == "done") return "done";
  if (stop == "gate") return "stopped by a gate";
  if (stop == "repetition") return "stopped: repetition";
  if (stop == "provider_error") return "provider error";
  if (stop == "store_error") return "session store error";
  if (stop == "cancelled") return "cancelled";
  if (stop == "terminated") return "done (tools asked to stop)";
  return "?";
}

std::string retry_line(const json& e) {
  return "moat: the model call failed (" + str(e, "reason") + "): retry " +
         std::to_string(e.value("attempt", 0)) + " in " + std::to_string(e.value("delay_ms", 0LL)) +
         " ms\n";
}

std::string cache_miss_line(const json& e) {
  char cost[32];
  std::snprintf(cost, sizeof cost, "$%.4f", e.value("cost", 0.0));
  return "moat: cache miss: " + std::to_string(e.value("missed_tokens", 0LL)) +
         " tokens not read from the cache (" + str(e, "reason") + "), " + cost + "\n";
}

// The summary: how the run stopped, where its records are.
std::string result_lines(const json& e, std::string_view said) {
  const int turns = e.value("turns", 0);
  std::string out = "\nmoat: " + std::string(stop_text(str(e, "stop"))) + " after " +
                    std::to_string(turns) + " turn" + (turns == 1 ? "" : "s");
  if (!str(e, "detail").empty() && str(e, "detail") != said) out += " (" + str(e, "detail") + ")";
  out += "\n";
  if (!str(e, "session_file").empty())
    out += "moat: session file: " + str(e, "session_file") + "\n";
  if (!str(e, "audit_log").empty()) out += "moat: audit log:    " + str(e, "audit_log") + "\n";
  out += host_files_lines(e);
  if (str(e, "stop") == "cancelled" && !str(e, "session_file").empty())
    out += "moat: the session is saved: moat run --continue goes on with it\n";
  return out;
}

// The summary on stderr; in print mode, the final answer on stdout, alone.
void TextEventSink::result(const json& e) {
  end_line();
  std::fputs(result_lines(e, said_).c_str(), stderr);
  std::fflush(stderr);
  if (held_.empty()) return;
  if (!e.contains("answer") || !e["answer"].is_string()) return to_stderr(held_);
  std::fputs(held_.c_str(), stdout);
  if (held_.back() != '\n') std::fputc('\n', stdout);
  std::fflush(stdout);
}

}  // namespace

std::string event_status_lines(const json& e, std::string_view said) {
  const std::string type = str(e, "type");
  if (type == "note" || type == "error") return "moat: " + str(e, "message") + "\n";
  if (type == "gate") return "moat: " + str(e, "reason") + "\n";
  if (type == "retry") return retry_line(e);
  if (type == "cache_miss") return cache_miss_line(e);
  if (type == "result") return result_lines(e, said);
  return "";
}

std::unique_ptr<EventSink> text_event_sink() { return std::make_unique<TextEventSink>(); }

}  // namespace moat::agent
