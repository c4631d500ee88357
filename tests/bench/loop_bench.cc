// tests/bench/loop_bench.cc: the host's own cost of one model turn: CPU time and peak memory
// per turn of a 50-turn session whose history holds ~100k tokens, against the mock model
// server (in a child process, so its work is not counted), next to `sh -c true` as a floor; the
// wall time of a turn on a reused connection to a server without TCP_NODELAY (issue 27 item 22).
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "agent/providers/http_provider.h"
#include "agent/providers/prompt.h"
#include "agent/providers/usage.h"
#include "tests/bench/loop_turn.h"
#include "tests/support/mock_model_server.h"

extern char** environ;

namespace {

using namespace moat::agent;
using namespace moat::agent::providers;
using nlohmann::json;

constexpr int kTurns = 50;
constexpr size_t kHistoryTokens = 100000;  // the mock counts 4 bytes per token

double cpu_ms(const rusage& r) {
  return (r.ru_utime.tv_sec + r.ru_stime.tv_sec) * 1e3 +
         (r.ru_utime.tv_usec + r.ru_stime.tv_usec) / 1e3;
}

// Peak RSS since the last reset (Linux: writing 5 to clear_refs resets VmHWM).
void reset_peak() { std::ofstream("/proc/self/clear_refs") << "5"; }
long peak_kib() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
  return -1;
}

struct ServerChild {
  pid_t pid;
  int stop_fd;  // closing it tells the child to stop
  std::string base_url;
};

// The mock runs in a child so that its CPU time and memory stay out of our numbers.
ServerChild start_server(Api api) {
  int url_pipe[2], stop_pipe[2];
  if (pipe(url_pipe) != 0 || pipe(stop_pipe) != 0) std::abort();
  const pid_t pid = fork();
  if (pid == 0) {
    close(url_pipe[0]);
    close(stop_pipe[1]);
    {
      moat::testing::MockModelServer server(api);
      server.set_responder([](const json&, size_t n) {
        moat::testing::ScriptedTurn t;
        t.text = "Turn " + std::to_string(n) + ": reading the next file to find the bug.";
        if (n + 1 < static_cast<size_t>(kTurns))
          t.calls = {{"call_" + std::to_string(n),
                      "read",
                      {{"path", "src/file" + std::to_string(n) + ".cc"}}}};
        return t;
      });
      const std::string url = server.base_url();
      if (write(url_pipe[1], url.data(), url.size()) < 0) _exit(1);
      close(url_pipe[1]);
      char c;
      while (read(stop_pipe[0], &c, 1) > 0) {}
    }
    _exit(0);
  }
  close(url_pipe[1]);
  close(stop_pipe[0]);
  char buf[256];
  const ssize_t n = read(url_pipe[0], buf, sizeof buf);
  close(url_pipe[0]);
  return {pid, stop_pipe[1], std::string(buf, n > 0 ? static_cast<size_t>(n) : 0)};
}

json text_message(const char* role, const std::string& text) {
  return {{"role", role}, {"content", json::array({{{"type", "text"}, {"text", text}}})}};
}

// ~100k tokens of earlier conversation: file reads the agent already did.
std::vector<Message> history() {
  std::vector<Message> h{text_message("user", "Find and fix the crash in the parser.")};
  std::string chunk;
  for (int i = 0; chunk.size() < 4000; ++i)
    chunk += "line " + std::to_string(i) + ": int x = parse(buf, len);\n";
  for (size_t bytes = 0, i = 0; bytes < kHistoryTokens * 4; ++i) {
    const std::string id = "old_" + std::to_string(i);
    h.push_back(
        {{"role", "assistant"},
         {"content",
          json::array({{{"type", "toolCall"},
                        {"id", id},
                        {"name", "read"},
                        {"arguments", {{"path", "src/old" + std::to_string(i) + ".cc"}}}}})},
         {"stopReason", "toolUse"}});
    h.push_back({{"role", "toolResult"},
                 {"toolCallId", id},
                 {"toolName", "read"},
                 {"content", json::array({{{"type", "text"}, {"text", chunk}}})},
                 {"isError", false}});
    bytes += chunk.size() + 120;
  }
  return h;
}

struct Stats {
  double cpu_median, cpu_max, wall_median;
  long peak_kib_max;
};

template <typename T>
T median(std::vector<T> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

Stats run_session(Api api) {
  ServerChild server = start_server(api);
  ProviderSettings s;
  s.name = "mock";
  s.api = api;
  s.base_url = server.base_url;
  s.model = "mock-model";
  auto provider = make_http_provider(s);
  PromptInputs in;
  in.tools = {{"read", "Read a file",
               json::parse(R"({"type":"object","properties":{"path":{"type":"string"}}})"), false,
               false}};
  in.workspace = "/work/repo";
  ModelRequest request;
  request.tools = in.tools;
  request.messages = history();
  const Pricing pricing{3, 15, 0.3, 3.75, std::nullopt, {}};
  SessionTotals totals;
  std::optional<CacheState> cache;
  std::vector<double> cpu, wall;
  long peak = 0;
  for (int turn = 0; turn < kTurns; ++turn) {
    reset_peak();
    rusage before, after;
    getrusage(RUSAGE_SELF, &before);
    const auto t0 = std::chrono::steady_clock::now();
    // One turn of the host: assemble, send, stream, decode, count, audit, append.
    request.system = assemble_system_prompt(in);
    auto answer = provider->complete(request, {}, {});
    if (!answer) {
      std::fprintf(stderr, "turn %d: %s\n", turn, answer.error().message().c_str());
      std::exit(1);
    }
    const Usage u = Usage::from_message(*answer);
    totals.add(u, cost_of(u, pricing));
    (void)audit_cache(cache, "mock-model", u, pricing, std::chrono::system_clock::now());
    cache = CacheState{"mock-model", u.prompt(), std::chrono::system_clock::now()};
    request.messages.push_back(*answer);
    for (const auto& b : (*answer)["content"])
      if (b["type"] == "toolCall")
        request.messages.push_back(
            {{"role", "toolResult"},
             {"toolCallId", b["id"]},
             {"toolName", "read"},
             {"content", json::array({{{"type", "text"}, {"text", "int main() { return 0; }\n"}}})},
             {"isError", false}});
    const auto t1 = std::chrono::steady_clock::now();
    getrusage(RUSAGE_SELF, &after);
    cpu.push_back(cpu_ms(after) - cpu_ms(before));
    wall.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    peak = std::max(peak, peak_kib());
  }
  close(server.stop_fd);
  waitpid(server.pid, nullptr, 0);
  std::printf("  %-17s prompt at the last turn: %lld tokens, cache read %lld, cost $%.4f\n",
              std::string(api_name(api)).c_str(), static_cast<long long>(cache->prompt),
              static_cast<long long>(totals.usage.cache_read), totals.cost.total);
  return {median(cpu), *std::max_element(cpu.begin(), cpu.end()), median(wall), peak};
}

Stats run_floor() {
  std::vector<double> cpu, wall;
  long peak = 0;
  for (int i = 0; i < kTurns; ++i) {
    char arg0[] = "sh", arg1[] = "-c", arg2[] = "true";
    char* argv[] = {arg0, arg1, arg2, nullptr};
    const auto t0 = std::chrono::steady_clock::now();
    pid_t pid;
    if (posix_spawnp(&pid, "sh", nullptr, nullptr, argv, environ) != 0) std::abort();
    int status;
    rusage r;
    wait4(pid, &status, 0, &r);
    wall.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    cpu.push_back(cpu_ms(r));
    peak = std::max(peak, r.ru_maxrss);
  }
  // A child's ru_maxrss also counts the parent's pages it shared before exec, so sh's own
  // peak is read by sh itself from its /proc entry (VmHWM belongs to the exec'd image).
  FILE* f = popen("sh -c 'grep VmHWM /proc/$$/status'", "r");
  char line[128] = {0};
  if (f && fgets(line, sizeof line, f)) peak = std::strtol(line + 6, nullptr, 10);
  if (f) pclose(f);
  return {median(cpu), *std::max_element(cpu.begin(), cpu.end()), median(wall), peak};
}

// Issue 27 item 22: wall ms per turn (p50) on one reused connection, against the mock written
// as a server that lets Nagle hold its small writes (no TCP_NODELAY: Python's http.server, some
// local model servers) or as one that sets TCP_NODELAY. The first turn opens the connection and
// is not counted. Without the client's TCP_QUICKACK the first costs ~40 ms a turn more (the
// delayed ACK each held piece waits for).
double reused_connection_ms(bool server_nodelay, int turns) {
  moat::testing::MockModelServer server(Api::kOpenAiChat, server_nodelay);
  server.set_responder([](const json&, size_t n) {
    moat::testing::ScriptedTurn t;
    t.text = "Turn " + std::to_string(n) + ".";
    return t;
  });
  ProviderSettings s;
  s.name = "mock";
  s.api = Api::kOpenAiChat;
  s.base_url = server.base_url();
  s.model = "mock-model";
  auto provider = make_http_provider(s);
  ModelRequest request;
  request.messages = {text_message("user", "Say which turn this is.")};
  std::vector<double> wall;
  for (int turn = 0; turn <= turns; ++turn) {
    const auto t0 = std::chrono::steady_clock::now();
    if (auto answer = provider->complete(request, {}, {}); !answer) {
      std::fprintf(stderr, "turn %d: %s\n", turn, answer.error().message().c_str());
      std::exit(1);
    }
    if (turn > 0)
      wall.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  return median(wall);
}

void print_reused_connection(int turns) {
  const double nagle = reused_connection_ms(false, turns);
  const double nodelay = reused_connection_ms(true, turns);
  std::printf(
      "\nreused connection, wall ms per turn (p50 of %d), openai-chat:\n"
      "  server without TCP_NODELAY (writes held by Nagle) %8.2f\n"
      "  server with TCP_NODELAY (baseline)                %8.2f\n"
      "  without / with: %.2fx\n",
      turns, nagle, nodelay, nagle / std::max(nodelay, 1e-3));
}

void print(const char* name, const Stats& s) {
  std::printf("%-28s %10.3f %10.3f %10.3f %12ld\n", name, s.cpu_median, s.cpu_max, s.wall_median,
              s.peak_kib_max);
}

}  // namespace

int main(int argc, char** argv) {
  // loop_bench [turn [rounds]]: with "turn", only the end-to-end turn of `moat run`;
  // loop_bench nagle [turns]: only the reused connection against a server without TCP_NODELAY.
  const bool turn_only = argc > 1 && std::string(argv[1]) == "turn";
  const bool nagle_only = argc > 1 && std::string(argv[1]) == "nagle";
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 5;
  if (turn_only) return moat::bench::run_turn_bench(rounds);
  if (nagle_only) {
    print_reused_connection(argc > 2 ? std::atoi(argv[2]) : 30);
    return 0;
  }
  std::printf(
      "loop_bench: %d turns, history of ~%zu tokens, mock model server in a child process\n",
      kTurns, kHistoryTokens);
  const Stats chat = run_session(Api::kOpenAiChat);
  const Stats anthropic = run_session(Api::kAnthropic);
  const Stats responses = run_session(Api::kOpenAiResponses);
  const Stats floor = run_floor();
  std::printf("\n%-28s %10s %10s %10s %12s\n", "per turn", "cpu ms p50", "cpu ms max",
              "wall ms p50", "peak RSS KiB");
  print("host turn, openai-chat", chat);
  print("host turn, anthropic", anthropic);
  print("host turn, openai-responses", responses);
  print("floor: sh -c true (child)", floor);
  std::printf("\nhost CPU per turn / floor: %.1fx (anthropic)\n",
              anthropic.cpu_median / std::max(floor.cpu_median, 1e-3));
  print_reused_connection(30);
  return moat::bench::run_turn_bench(rounds);
}
