// sandbox/net_proxy.h: the session's filtering HTTP proxy. Sandboxed programs reach it on the
// sandbox's loopback (HTTP_PROXY and friends point there); moatd accepts on that listening
// socket from its own threads, judges every connection by host name and port with the
// policy, resolves the name itself, connects, relays bytes (a CONNECT tunnel is never
// decrypted) and writes a `net` audit record for every connection (repeats of one kind within
// a second counted into one record: net_records.h).
#pragma once

#include <netinet/in.h>

#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "base/result.h"
#include "base/thread_set.h"
#include "base/unique_fd.h"
#include "policy/policy.h"
#include "policy/schema.h"
#include "sandbox/net_host_addresses.h"
#include "sandbox/net_records.h"

namespace moat::sandbox {

// The proxy's port on the sandbox's own loopback (its network namespace has nothing else).
inline constexpr int kProxyPort = 3128;

// Names the program that opened a connection ({call_id, exec_id, pid}), from the accepted
// socket, while the program still holds its end; merged into the connection's record.
using NetAttribution = std::function<nlohmann::json(int client)>;

// Puts an `ask` verdict on a connection to the person (sandbox/ask_broker.h): the decision
// with the person's answer in `answer`, or unchanged when nobody can be asked.
using NetAsk = std::function<policy::Decision(
    policy::Decision, const std::string& call_id, const std::string& what,
    const std::atomic<bool>& cancel, nlohmann::json& answer)>;

// The connections a session may open (issue 26 item 10), a token bucket: a burst of this many
// seconds' worth, then the steady rate of resources.network_rate (policy/schema.h: 200 a second
// by default, far above what a build or a package install opens, npm install of a large tree:
// a few thousand connections over minutes; far below a flood, 27,225 in 10 s). A connection
// past it is refused (resources.network_rate) and the call whose program opened it is ended
// (end_call); the session's other calls keep their network once the bucket refills.
inline constexpr std::int64_t kNetRateBurstSeconds = 10;

// Ends the running call `call_id` because of `why`; false when no such call runs or it is
// already being ended (sandbox/call_ends.h).
using NetEndCall = std::function<bool(const std::string& call_id, const std::string& why)>;

struct NetProxyOptions {
  // Open at once; more are refused with a 503 (resources.network_connections).
  std::int64_t max_connections = policy::kDefaultResources.network_connections;
  // Per session, both ways together (resources.network_bytes).
  std::int64_t max_bytes = policy::kDefaultResources.network_bytes;
  // A connection with no byte either way for this long is closed (resources.network_idle).
  std::int64_t idle_s = policy::kDefaultResources.network_idle_s;
  std::int64_t rate_per_s = policy::kDefaultResources.network_rate;
  std::int64_t rate_burst = policy::kDefaultResources.network_rate * kNetRateBurstSeconds;
  // Repeats of one kind of connection gather this long into one counted record.
  std::chrono::steady_clock::duration record_interval = kNetRecordInterval;
  // Test only, from moatd's command line (--test-resolve NAME=ADDRESS), never from a session:
  // names the proxy resolves to these addresses instead of asking the system resolver.
  std::map<std::string, std::string> resolve_overrides;
  NetAttribution attribute;  // null: records name no program
  NetEndCall end_call;       // null: a connection past the rate is refused, no call is ended
};

// Why the proxy refused a connection of moatd's own (NetProxy::open_local).
struct LocalRefusal {
  std::mutex mu;
  std::string why;  // the refusal's text, naming the rule ("" while none)
};

class NetProxy {
 public:
  // Serves `listener` from a thread of its own (one more per connection) until destroyed.
  // `policy` and `record` must outlive the proxy.
  static Result<std::unique_ptr<NetProxy>> start(UniqueFd listener, const policy::Policy& policy,
                                                 NetProxyOptions options, NetRecorder record);
  // Stops accepting, ends every connection and writes every record, counted ones too.
  ~NetProxy();
  // From now on an `ask` verdict goes to `ask` (set once the session's ask broker exists;
  // until then, and without one, an ask is refused naming its rule).
  void set_ask(NetAsk ask);
  // moatd's own entry (an MCP server declared with a url, sandbox/mcp_url.h): a socket bound
  // to the host's 127.0.0.1 and the address of a listener there, on which the proxy accepts
  // that one socket's connection (any other is closed) within kConnectTimeoutMs and serves it
  // as a sandboxed program's (the [[network]] rules, the session's limits, a `net` record),
  // the record naming `who` (e.g. {call_id, mcp_server}) instead of a program. When the proxy
  // refuses it, `refused` (optional) gets the refusal before its answer is sent. Thread-safe.
  struct LocalEntry {
    UniqueFd socket;
    sockaddr_in address{};
  };
  Result<LocalEntry> open_local(nlohmann::json who, std::shared_ptr<LocalRefusal> refused = {});

  NetProxy(const NetProxy&) = delete;
  NetProxy& operator=(const NetProxy&) = delete;

 private:
  NetProxy(UniqueFd listener, UniqueFd stop, const policy::Policy& policy, NetProxyOptions options,
           NetRecorder record);
  void accept_loop();
  // Answers a connection from the accept thread with a 503 naming `why`, and records it.
  void refuse_at_accept(UniqueFd client, const char* rule, const std::string& why);
  void refuse_backlog();  // after the accept thread ended: what it never took
  bool admit_at_rate();  // the accept thread's token bucket
  void refuse_over_rate(UniqueFd client);
  void serve(UniqueFd client, std::optional<nlohmann::json> who = std::nullopt,
             std::shared_ptr<LocalRefusal> refused = {});
  nlohmann::json attributed(int client) const;
  // The policy's verdict on a request, put to the person when it is an ask.
  policy::Decision decide(const std::string& host, int port, const nlohmann::json& record,
                          nlohmann::json& answer);

  UniqueFd listener_;
  UniqueFd stop_;  // an eventfd: readable once the proxy is stopping
  const policy::Policy& policy_;
  NetProxyOptions options_;
  std::atomic<std::int64_t> open_{0};
  std::atomic<std::int64_t> bytes_{0};
  std::atomic<bool> stopping_{false};  // an ask waiting for the person gives up
  std::mutex ask_mu_;
  NetAsk ask_;
  HostAddresses host_addresses_;  // read as the session starts, again after each change
  double rate_tokens_;            // the accept thread's alone
  std::chrono::steady_clock::time_point rate_last_;
  NetRecords records_;     // destroyed after the threads below end: their records are in
  ThreadSet connections_;  // only the accept thread spawns; joined after it ends
  std::mutex local_mu_;    // open_local's callers spawn into local_
  ThreadSet local_;
  std::thread acceptor_;
};

// The environment that points a sandbox's programs at the proxy (HTTP_PROXY, https_proxy, ...).
// NO_PROXY keeps on the sandbox's own loopback (its local servers) only the loopback names
// (localhost, 127.0.0.1) that no [[network]] rule of `policy` may allow: a host a rule
// names goes through the proxy, never around it into the empty namespace (issue 27 item 3).
std::map<std::string, std::string> proxy_environment(const policy::Policy& policy);

}  // namespace moat::sandbox
