// tests/integration/e2e/load_clients.h: many clients at once on one moatd, each a session that
// runs sandboxed commands one after another and checks each answer is its own (issue 26's load
// test; tests/bench/load_bench prints the same run's latencies and moatd's memory).
#pragma once

#include <string>
#include <vector>

namespace moat::e2e {

struct LoadPlan {
  std::string socket;      // moatd --socket
  std::string workspaces;  // client i says hello with <workspaces>/<i> (made by run_load)
  int clients = 32;
  int commands = 25;       // bash calls per client, one after another
  int timeout_ms = 120000; // for each frame awaited
};

// What one client saw. `problems` is empty when every command was answered with its own
// output and the session ended with bye.
struct ClientOutcome {
  std::string audit;  // the welcome's audit log path
  int answered = 0;   // commands answered with their own output
  std::vector<std::string> problems;
  std::vector<double> latencies_ms;  // call sent to its result read
};

struct LoadOutcome {
  std::vector<ClientOutcome> clients;
  double wall_s = 0;
  std::vector<double> latencies_ms() const;  // every client's, together
};

// Starts every client at once (a latch), each on its own thread and connection, and waits
// for them all.
LoadOutcome run_load(const LoadPlan& plan);

// The p-th percentile (0..100) of `values` (nearest rank); 0 when empty.
double percentile(std::vector<double> values, double p);

}  // namespace moat::e2e
