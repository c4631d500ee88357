// tests/integration/e2e/load_clients.cc: the load test's clients (load_clients.h).
#include "load_clients.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <latch>
#include <thread>

#include "e2e_support.h"

namespace moat::e2e {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

std::string marker(int client, int command) {
  return "client-" + std::to_string(client) + "-command-" + std::to_string(command);
}

// A frame's type; "" for none (the connection closed or the wait timed out).
std::string type_of(const json& frame) {
  return frame.is_object() ? frame.value("type", "") : "";
}

std::string text_of(const json& result) {
  std::string text;
  if (result.contains("content") && result["content"].is_array())
    for (const json& block : result["content"])
      if (block.is_object() && block.value("type", "") == "text") text += block.value("text", "");
  return text;
}

// One command and its answer; a problem's description, or "" when the answer is its own.
std::string run_command(RawClient& c, const LoadPlan& plan, int client, int command,
                        ClientOutcome& out) {
  const std::string id = "c" + std::to_string(command), want = marker(client, command);
  const auto sent = Clock::now();
  c.send_json({{"type", "call"},
               {"id", id},
               {"tool", "bash"},
               {"arguments", {{"command", "echo " + want}}}});
  const json r = c.read_result(plan.timeout_ms);
  out.latencies_ms.push_back(
      std::chrono::duration<double, std::milli>(Clock::now() - sent).count());
  if (type_of(r) != "result" || r.value("id", "") != id)
    return id + ": no result (" + (r.is_null() ? "connection closed or timed out" : r.dump()) + ")";
  const std::string text = text_of(r);
  if (r.value("isError", true)) return id + ": an error result: " + text;
  // Its own output, and nobody else's: the line it echoed, once.
  if (text.find(want + "\n") == std::string::npos || text.find("client-") != text.rfind("client-"))
    return id + ": answered with another output: " + text;
  return "";
}

ClientOutcome run_client(const LoadPlan& plan, int client, std::latch& start) {
  ClientOutcome out;
  const std::string ws = plan.workspaces + "/" + std::to_string(client);
  start.arrive_and_wait();
  RawClient c(plan.socket);
  c.send_json({{"type", "hello"}, {"version", 1}, {"workspace", ws}, {"client", "load"}});
  const json welcome = c.read_frame(plan.timeout_ms);
  if (type_of(welcome) != "welcome") {
    out.problems.push_back("no welcome: " + (welcome.is_null() ? "none" : welcome.dump()));
    return out;
  }
  out.audit = welcome.value("audit", "");
  for (int i = 0; i < plan.commands; ++i) {
    std::string problem = run_command(c, plan, client, i, out);
    if (!problem.empty()) {
      out.problems.push_back(problem);
      return out;
    }
    ++out.answered;
  }
  c.send_json({{"type", "bye"}});
  if (const json bye = c.read_frame(plan.timeout_ms); type_of(bye) != "bye")
    out.problems.push_back("no bye: " + (bye.is_null() ? "none" : bye.dump()));
  return out;
}

}  // namespace

std::vector<double> LoadOutcome::latencies_ms() const {
  std::vector<double> all;
  for (const ClientOutcome& c : clients)
    all.insert(all.end(), c.latencies_ms.begin(), c.latencies_ms.end());
  return all;
}

LoadOutcome run_load(const LoadPlan& plan) {
  for (int i = 0; i < plan.clients; ++i)
    std::filesystem::create_directories(plan.workspaces + "/" + std::to_string(i));
  LoadOutcome outcome;
  outcome.clients.resize(static_cast<std::size_t>(plan.clients));
  std::latch start(plan.clients + 1);
  std::vector<std::thread> threads;
  for (int i = 0; i < plan.clients; ++i)
    threads.emplace_back([&, i] {
      outcome.clients[static_cast<std::size_t>(i)] = run_client(plan, i, start);
    });
  const auto began = Clock::now();
  start.arrive_and_wait();
  for (std::thread& t : threads) t.join();
  outcome.wall_s = std::chrono::duration<double>(Clock::now() - began).count();
  return outcome;
}

double percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const auto rank = static_cast<std::size_t>(std::ceil(p / 100 * static_cast<double>(values.size())));
  return values[std::min(values.size() - 1, rank == 0 ? 0 : rank - 1)];
}

}  // namespace moat::e2e
